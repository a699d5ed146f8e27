// URLs the engine reads while rendering (!include, !includeurl, !include_many, !includesub,
// !theme ... from, %load_json, <img:...>): the worker JVM asks the server for them (worker.ts), so
// they go through the egress client and its address guard after the allow-list check, are kept in
// memory with their validators, and are revalidated with a conditional GET once older than the
// freshness window. Every answer carries a hash of what the engine got; the diagram cache records
// those with each entry, so a changed include re-renders the diagram (plantuml-server#261).
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { ByteLru } from '../../../infra/cache/lru.ts';
import { SingleFlight } from '../../../infra/cache/single-flight.ts';
import { BodyTooLarge, readCapped } from '../../../infra/egress/capped-body.ts';
import { type Egress, refusal } from '../../../infra/egress/client.ts';
import { conditionalGet, type StoredValidators, validatorsOf } from '../../../infra/egress/revalidate.ts';
import type { IncludeRecord } from './protocol.ts';
import type { FetchAnswer } from './worker.ts';

export interface IncludeOptions {
  http: Egress;
  /** Engine profile (worker.ts engineProfile): ALLOWLIST confines URLs to `allowlist`, SANDBOX refuses all. */
  profile: string;
  allowlist: readonly string[];
  /** An include younger than this is used without asking its server. */
  freshMs: number;
  timeoutMs: number;
  maxBytes: number;
  memoryBytes: number;
  log: Logger;
}

interface Stored extends FetchAnswer, StoredValidators {
  checkedAt: number;
}

const EMPTY = Buffer.alloc(0);
/** The hash of an answer for a server that could not be reached (not a refusal, not a status). */
const UNREACHABLE = 'error';
const refused: FetchAnswer = { status: 403, type: 'text/plain', body: EMPTY, hash: 'refused' };

/** `http://Host:80/a` and `http://host/a` are the same prefix; null if not an http(s) URL. */
function normal(u: string): string | null {
  try {
    const p = new URL(u.trim());
    return p.protocol === 'http:' || p.protocol === 'https:' ? p.href : null;
  } catch {
    return null;
  }
}

export class IncludeFetcher {
  private readonly store: ByteLru<Stored>;
  private readonly flights = new SingleFlight<FetchAnswer>();
  private readonly prefixes: string[];
  private readonly o: IncludeOptions;

  constructor(o: IncludeOptions) {
    this.o = o;
    this.store = new ByteLru(o.memoryBytes, (s) => s.body.length + 512);
    this.prefixes = o.allowlist.flatMap((p) => normal(p) ?? []);
  }

  /** The answer for a URL the engine reads (never throws). */
  fetch(url: string): Promise<FetchAnswer> {
    const href = this.check(url);
    if (!href) return Promise.resolve(refused);
    const stored = this.store.get(href);
    if (stored && Date.now() - stored.checkedAt < this.o.freshMs) return Promise.resolve(stored);
    return this.flights.run(href, () => this.load(href, stored));
  }

  /**
   * True when every recorded include still has the content it had (revalidating stale ones). An
   * include whose server cannot be reached counts as unchanged: a diagram rendered from it before
   * stays better than an error image.
   */
  async current(records: readonly IncludeRecord[]): Promise<boolean> {
    const now = await Promise.all(records.map((r) => this.fetch(r.url)));
    return now.every((a, i) => a.hash === records[i]!.hash || a.hash === UNREACHABLE);
  }

  /** The URL to fetch, or null when the profile or the allow-list does not let it through. */
  private check(url: string): string | null {
    const href = normal(url);
    if (!href || /^[a-z]+:\/\/[^/]*@/i.test(url)) return null;
    if (this.o.profile === 'SANDBOX') return null;
    if (this.o.profile === 'ALLOWLIST' && !this.prefixes.some((p) => href.startsWith(p))) return null;
    return href;
  }

  private async load(href: string, stored: Stored | undefined): Promise<FetchAnswer> {
    const u = new URL(href);
    try {
      const r = await conditionalGet(
        this.o.http,
        {
          url: u,
          headers: { 'user-agent': 'devutil-plantuml' },
          signal: AbortSignal.timeout(this.o.timeoutMs),
        },
        stored,
      );
      if (r.notModified) {
        // Only a request that carried validators is answered so, and they came from `stored`.
        stored!.checkedAt = Date.now();
        return stored!;
      }
      const res = r.res;
      if (res.statusCode !== 200) {
        await res.body.dump();
        // The engine reports the include as missing; remembered like content, so it is not
        // asked again inside the freshness window and a later 200 counts as a change.
        const status = res.statusCode >= 400 ? res.statusCode : 502;
        return this.keep(href, { status, type: 'text/plain', body: EMPTY, hash: `status:${status}` }, null);
      }
      const body = await readCapped(res.body, this.o.maxBytes, {
        declared: res.headers['content-length'],
        what: 'include',
      });
      const hash = `sha256:${createHash('sha256').update(body).digest('base64url')}`;
      const type = String(res.headers['content-type'] ?? 'text/plain');
      return this.keep(href, { status: 200, type, body, hash }, res.headers);
    } catch (err) {
      const host = u.host;
      const byPolicy = refusal(err);
      if (byPolicy) {
        this.o.log.warn({ host, reason: byPolicy.message }, 'plantuml include refused: a non-public address');
        return refused;
      }
      if (err instanceof BodyTooLarge) {
        this.o.log.warn({ host, limit: err.limit }, 'plantuml include refused: too large');
        return refused;
      }
      const reason = err instanceof Error ? err.message : String(err);
      // An include whose server is down keeps its last content rather than breaking the diagram.
      if (stored?.status === 200) {
        this.o.log.warn({ host, reason }, 'plantuml include unreachable, using the stored copy');
        return stored;
      }
      this.o.log.warn({ host, reason }, 'plantuml include fetch failed');
      return { status: 502, type: 'text/plain', body: EMPTY, hash: UNREACHABLE };
    }
  }

  private keep(href: string, a: FetchAnswer, headers: Record<string, unknown> | null): FetchAnswer {
    this.store.set(href, {
      ...a,
      ...(headers ? validatorsOf(headers) : { etag: null, lastModified: null }),
      checkedAt: Date.now(),
    });
    return a;
  }
}
