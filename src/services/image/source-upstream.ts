// An upstream origin behind a URL template (Picsum-style .../seed/{id}/{width}/{height}). Fetched
// through the egress client under a deadline and a body cap, only from allowed hosts (redirects are
// followed by hand so every hop is checked), and kept in the disk cache so an id stays byte-stable.
import type { Dispatcher } from 'undici';
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { BodyTooLarge, readCapped } from '../../infra/egress/capped-body.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { REDIRECT_STATUSES, redirectTarget } from '../../infra/egress/redirect.ts';
import type { ImageCache } from './service.ts';
import {
  type Catalogue,
  type ImageSource,
  type Loaded,
  randomPoolId,
  type SourceEntry,
  SourceError,
} from './source.ts';

export interface UpstreamOptions {
  template: string;
  /** Allowed hosts (lower case); empty = the template's host only. */
  hosts: string[];
  width: number;
  height: number;
  timeoutMs: number;
  maxBytes: number;
  pool: number;
  /** Cache for fetched originals, used disk only (shared with processed results). */
  disk: ImageCache;
  userAgent: string;
  /** The outbound client (behind the egress guard, with the utility's policy); closed with the source. */
  http: Egress;
}

const MAX_REDIRECTS = 4;

export class UpstreamSource implements ImageSource {
  readonly name = 'upstream';
  readonly remote = true;
  private readonly hosts: Set<string>;
  private readonly flights = new SingleFlight<Buffer>();
  private readonly http: Egress;

  private readonly o: UpstreamOptions;
  constructor(o: UpstreamOptions) {
    this.o = o;
    this.http = o.http;
    const own = new URL(o.template.replace(/\{\w+\}/g, 'x')).hostname.toLowerCase();
    this.hosts = new Set(o.hosts.length ? o.hosts.map((h) => h.toLowerCase()) : [own]);
    if (!this.hosts.has(own)) throw new Error(`upstream template host ${own} is not in the allowed hosts`);
  }

  /** The URL for one id: percent-encoded, so it stays one path segment on the allowed host. */
  urlFor(id: string): string {
    return this.o.template
      .replaceAll('{id}', encodeURIComponent(id))
      .replaceAll('{width}', String(this.o.width))
      .replaceAll('{height}', String(this.o.height));
  }

  pick(id: string | null): SourceEntry {
    const pid = id ?? randomPoolId(this.o.pool);
    // URL parsers read `.`, `..` and their %2E spellings as dot segments whatever the encoding.
    if (pid === '.' || pid === '..') throw new SourceError('id cannot be a URL path segment');
    return { id: pid, key: `up:${this.urlFor(pid)}`, width: this.o.width, height: this.o.height };
  }

  async load(entry: SourceEntry): Promise<Loaded> {
    const cacheKey = `src:${entry.key}`;
    const hit = await this.o.disk.get(cacheKey, { memory: false });
    if (hit) return { kind: 'bytes', data: hit.body };
    // One fetch per original even when several sizes of a new id are asked for at once.
    const data = await this.flights.run(cacheKey, async () => {
      const fetched = await this.fetch(this.urlFor(entry.id));
      await this.o.disk.put(cacheKey, fetched, {}, { memory: false });
      return fetched;
    });
    return { kind: 'bytes', data };
  }

  private async fetch(first: string): Promise<Buffer> {
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    let url = new URL(first);
    for (let hop = 0; ; hop++) {
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        throw new SourceError('upstream redirect to a non-http URL');
      if (!this.hosts.has(url.hostname.toLowerCase()))
        throw new SourceError(`upstream host ${url.hostname} is not allowed`);
      let res: Dispatcher.ResponseData;
      try {
        res = await this.http.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          signal,
          headers: { 'user-agent': this.o.userAgent, accept: 'image/webp,image/jpeg,image/*;q=0.8' },
        });
      } catch (err) {
        throw new SourceError(`upstream request failed: ${(err as Error).message}`, { cause: err });
      }
      const { statusCode, headers, body } = res;
      const location = typeof headers.location === 'string' ? headers.location : undefined;
      if (REDIRECT_STATUSES.has(statusCode) && location) await body.dump();
      // The target's scheme and host are checked at the top of the loop, like the first URL.
      const next = redirectTarget(statusCode, location, url, hop, {
        max: MAX_REDIRECTS,
        allowed: () => true,
        fail: (f) =>
          new SourceError(
            f === 'invalid' ? 'upstream sent an invalid redirect' : 'upstream redirected too many times',
          ),
      });
      if (next) {
        url = next;
        continue;
      }
      if (statusCode !== 200) {
        await body.dump();
        throw new SourceError(`upstream answered ${statusCode}`);
      }
      const type = String(headers['content-type'] ?? '');
      if (!type.startsWith('image/')) {
        await body.dump();
        throw new SourceError(`upstream sent ${type.slice(0, 60) || 'no content type'}, not an image`);
      }
      try {
        return await readCapped(body, this.o.maxBytes, { declared: headers['content-length'] });
      } catch (err) {
        if (err instanceof BodyTooLarge) throw new SourceError('upstream body is over the size cap');
        throw new SourceError(`upstream body failed: ${(err as Error).message}`, { cause: err });
      }
    }
  }

  list(offset: number, limit: number): Catalogue {
    const items: SourceEntry[] = [];
    // No `url`: the template may carry an access key in its query.
    for (let i = offset; i < Math.min(this.o.pool, offset + limit); i++) items.push(this.pick(String(i)));
    return { total: this.o.pool, items };
  }

  close(): void {
    void this.http.close();
  }
}
