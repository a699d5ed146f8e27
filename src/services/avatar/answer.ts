// How an avatar lookup's outcome is answered: a memory hit as a prepared answer the fast lane
// repeats, else the image, a 304/412, the 404 or the redirect, with Gravatar's caching headers.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { evaluate, type Precondition } from '../../infra/http/conditional.ts';
import type { FastLane } from '../../infra/http/fast-lane.ts';
import { PreparedMemo } from '../../infra/http/prepared-response.ts';
import type { Outcome, Served } from './service.ts';
import type { Uploads } from './uploads.ts';

/** How long the fast lane repeats an avatar without asking the lookups again. */
const LANE_MS = 2000;

function precondition(req: FastifyRequest, etag: string, lastModified: Date | null): Precondition {
  return evaluate(req.method, req.headers, { etag, lastModified: lastModified?.getTime() ?? null });
}

const disposition = (name: string, contentType: string) =>
  `inline; filename="${name}.${contentType.slice('image/'.length).replace('jpeg', 'jpg')}"`;

export class AvatarAnswers {
  private readonly cfg: Config['avatar'];
  private readonly lane: FastLane;
  private readonly uploads: Uploads | null;
  private readonly served: (source: Served) => void;
  /** Short and revalidated: a changed avatar shows within max-age, an unchanged one costs a 304. */
  private readonly cacheControl: string;
  /** A memory hit's headers are worked out once per rendered body and file name. */
  private readonly prepared = new PreparedMemo();
  private expiresAt = 0;
  private expiresText = '';

  constructor(
    cfg: Config['avatar'],
    lane: FastLane,
    uploads: Uploads | null,
    served: (source: Served) => void,
  ) {
    this.cfg = cfg;
    this.lane = lane;
    this.uploads = uploads;
    this.served = served;
    this.cacheControl = `public, max-age=${cfg.maxAgeSec}, must-revalidate`;
  }

  /** Expires changes once a second: formatted once a second, not once a request. */
  private expires(): string {
    const now = Math.floor(Date.now() / 1000);
    if (now !== this.expiresAt) {
      this.expiresAt = now;
      this.expiresText = new Date((now + this.cfg.maxAgeSec) * 1000).toUTCString();
    }
    return this.expiresText;
  }

  async send(req: FastifyRequest, reply: FastifyReply, out: Outcome, name: string): Promise<unknown> {
    const { served, cacheControl, uploads } = this;
    // 304s and 412s keep the path below: they never touch the cache (nor its counters).
    const pre = out.kind === 'image' ? precondition(req, out.etag, out.lastModified) : 'pass';
    if (out.kind === 'image' && pre === 'pass') {
      const body = out.hit();
      if (body) {
        served(out.source);
        reply.header('expires', this.expires());
        const lm = out.lastModified?.getTime() ?? 0;
        const answer = this.prepared.get(body, `${name}\n${out.source}\n${out.etag}\n${lm}`, () => ({
          headers: {
            'cache-control': cacheControl,
            'access-control-allow-origin': '*',
            etag: out.etag,
            ...(out.lastModified ? { 'last-modified': out.lastModified.toUTCString() } : {}),
            'x-avatar-source': out.source,
            'content-disposition': disposition(name, out.contentType),
            'content-type': out.contentType,
          },
        }));
        // Repeats of this URL are answered by the fast lane while the cache holds this very body
        // and no upload changed (here or announced by another instance), for at most LANE_MS: the
        // lookups this answer rests on (an upload's absence, the mirror's copy) are not repeated
        // meanwhile, as the uploads' own lookup memo does for longer. Each 200 repeat is a cache hit
        // (counted by out.holds()); a 304 reads no cache, as through the router. Each is a served
        // answer of its source.
        const source = out.source;
        const generation = uploads?.generation ?? 0;
        this.lane.remember(req, answer, {
          until: Date.now() + LANE_MS,
          valid: (status) => (uploads?.generation ?? 0) === generation && (status === 304 || out.holds(body)),
          onHit: () => served(source),
        });
        return answer.sendBody(reply);
      }
    }
    reply.header('cache-control', cacheControl);
    reply.header('expires', this.expires());
    reply.header('access-control-allow-origin', '*');
    if (out.kind === 'not_found') {
      served('not_found');
      return reply.code(404).type('text/plain; charset=utf-8').send('404 Not Found\n');
    }
    if (out.kind === 'redirect') {
      served('redirect');
      return reply.code(302).header('location', out.location).send();
    }
    served(out.source);
    reply.header('etag', out.etag);
    if (out.lastModified) reply.header('last-modified', out.lastModified.toUTCString());
    reply.header('x-avatar-source', out.source);
    if (pre === 'not-modified') return reply.code(304).send();
    if (pre === 'failed') return reply.code(412).send();
    const body = await out.body();
    reply.header('content-disposition', disposition(name, out.contentType));
    return reply.code(200).type(out.contentType).send(body);
  }
}
