// GET/HEAD /avatar/<hash>[.ext] and /avatar/ (Gravatar's image URL), plus the operator's PUT and
// DELETE for uploads. Thin: parsing is request.ts, the lookup order service.ts, storage uploads.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { evaluate, type Precondition } from '../../infra/http/conditional.ts';
import { AppError, badRequest, forbidden, notFound, unavailable } from '../../infra/http/errors.ts';
import { PreparedMemo } from '../../infra/http/prepared-response.ts';
import { QueueFull } from '../../infra/limits/fair-queue.ts';
import { checkAdmin, readUpload } from './admin.ts';
import { DicebearMissing } from './gen/dicebear.ts';
import { parseLogin } from './github.ts';
import { parseFile, parseQuery, RATINGS, type Rating } from './request.ts';
import { parseHash } from './seed.ts';
import type { AvatarService, Outcome } from './service.ts';
import { UploadError, type Uploads } from './uploads.ts';

export const MAX_SIZE = 2048;
/** How long the fast lane repeats an avatar without asking the lookups again. */
const LANE_MS = 2000;

type Route = { Params: { file?: string }; Querystring: Record<string, unknown> };
type Req = FastifyRequest<Route>;

function precondition(req: Req, etag: string, lastModified: Date | null): Precondition {
  return evaluate(req.method, req.headers, { etag, lastModified: lastModified?.getTime() ?? null });
}

export function avatarRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  svc: AvatarService,
  uploads: Uploads | null,
  served: (source: string) => void,
): void {
  const cfg = ctx.config.avatar;
  // Short and revalidated: a changed avatar shows within max-age, an unchanged one costs a 304.
  const cacheControl = `public, max-age=${cfg.maxAgeSec}, must-revalidate`;
  const limit = ctx.limiter.hook('avatar', cfg.rateLimit);
  const adminLimit = ctx.limiter.hook('avatar-admin', cfg.adminRateLimit);

  // Expires changes once a second: format it once a second, not once a request.
  let expiresAt = 0;
  let expiresText = '';
  const expires = () => {
    const now = Math.floor(Date.now() / 1000);
    if (now !== expiresAt) {
      expiresAt = now;
      expiresText = new Date((now + cfg.maxAgeSec) * 1000).toUTCString();
    }
    return expiresText;
  };

  // A memory hit's headers are worked out once per rendered body and file name.
  const prepared = new PreparedMemo();
  const disposition = (name: string, contentType: string) =>
    `inline; filename="${name}.${contentType.slice('image/'.length).replace('jpeg', 'jpg')}"`;

  async function send(req: Req, reply: FastifyReply, out: Outcome, name: string): Promise<unknown> {
    // 304s and 412s keep the path below: they never touch the cache (nor its counters).
    const pre = out.kind === 'image' ? precondition(req, out.etag, out.lastModified) : 'pass';
    if (out.kind === 'image' && pre === 'pass') {
      const body = out.hit();
      if (body) {
        served(out.source);
        reply.header('expires', expires());
        const lm = out.lastModified?.getTime() ?? 0;
        const answer = prepared.get(body, `${name}\n${out.source}\n${out.etag}\n${lm}`, () => ({
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
        // meanwhile, as the uploads' own lookup memo does for longer. Each repeat is a cache hit
        // (counted by out.hit()) and a served answer of its source.
        const source = out.source;
        const generation = uploads?.generation ?? 0;
        ctx.lane.remember(req, answer, {
          until: Date.now() + LANE_MS,
          valid: (status) =>
            (uploads?.generation ?? 0) === generation && (status === 304 || out.hit() === body),
          onHit: () => served(source),
        });
        return answer.sendBody(reply);
      }
    }
    reply.header('cache-control', cacheControl);
    reply.header('expires', expires());
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

  const get = async (req: Req, reply: FastifyReply) => {
    const { hashText, format } = parseFile(req.params.file ?? '');
    const q = parseQuery(hashText, format, req.query, { maxSize: MAX_SIZE, fallback: cfg.default });
    const name = q.hash?.hex ?? 'avatar';
    const client = req.clientKey;
    try {
      return await send(req, reply, await svc.resolve(q, client), name);
    } catch (err) {
      if (err instanceof QueueFull) throw unavailable('busy rendering avatars, try again shortly', 1);
      if (err instanceof DicebearMissing) throw notInstalled(err);
      if (err instanceof AppError || q.force) throw err;
      // A stored original that no longer decodes must not take the avatar down: serve the default.
      req.log.warn(
        { reason: err instanceof Error ? err.message : String(err) },
        'avatar source failed, serving the default',
      );
      reply.removeHeader('last-modified');
      const fallback = await svc.resolve({ ...q, force: true }, client).catch((e: unknown) => {
        throw e instanceof DicebearMissing ? notInstalled(e) : e;
      });
      return send(req, reply, fallback, name);
    }
  };
  const config = { svc: 'avatar' };
  const tags = ['avatar'];
  const getDoc = {
    summary: 'Avatar for an MD5 or SHA-256 email hash (Gravatar query: s, d, r, f; .png/.jpg/.webp suffix)',
    description:
      'Uploaded here, else mirrored from the upstream, else the d= default (identicon, retro, monsterid, wavatar, robohash, mp, initials, blank, color, a DiceBear style as dicebear-<style>, 404 or an allowed URL). Without a hash: the default picture.',
    tags,
  };
  // No hook at all when unlimited: this is the hot path of every page that shows avatars.
  const getOpts = cfg.rateLimit.limit > 0 ? { onRequest: limit, config } : { config };
  for (const url of ['/avatar', '/avatar/', '/avatar/:file'])
    app.get<Route>(url, { ...getOpts, schema: getDoc }, get);

  // GitHub account pictures; the rest of the query (s, d, f, initials) as for a hash.
  app.get<Route>(
    '/avatar/github/:file',
    {
      ...getOpts,
      schema: {
        summary: 'Avatar of a GitHub account (github.com/<user>.png, cached), with the Gravatar query',
        description: 'Unknown accounts and an unreachable GitHub get the d= default, seeded with the login.',
        tags,
      },
    },
    async (req: Req, reply) => {
      const { hashText, format } = parseFile(req.params.file ?? '');
      const login = parseLogin(hashText);
      if (!login) throw badRequest('expected a GitHub login: letters, digits and single hyphens, at most 39');
      const q = parseQuery(`github:${login}`, format, req.query, {
        maxSize: MAX_SIZE,
        fallback: cfg.default,
      });
      try {
        return await send(req, reply, await svc.resolveGithub(login, q, req.clientKey), login);
      } catch (err) {
        if (err instanceof QueueFull) throw unavailable('busy rendering avatars, try again shortly', 1);
        if (err instanceof DicebearMissing) throw notInstalled(err);
        throw err;
      }
    },
  );

  const target = (req: Req) => {
    const parsed = parseHash(parseFile(req.params.file ?? '').hashText);
    if (!parsed) throw badRequest('the path must end in an MD5 or SHA-256 hex hash');
    return parsed;
  };
  const adminOnly = async (req: FastifyRequest) => {
    if (!uploads || !cfg.adminToken) throw forbidden('uploads are disabled on this server');
    checkAdmin(req.headers.authorization, cfg.adminToken);
  };

  // Budget and token are checked before the image is read, so only the admin can send a long upload.
  app.put<Route>(
    '/avatar/:file',
    {
      onRequest: [adminLimit, adminOnly],
      config: { ...config, largeBody: true },
      schema: {
        summary: 'Upload the avatar for a hash (admin: Authorization: Bearer DEVUTIL_AVATAR_ADMIN_TOKEN)',
        description:
          'The image as the body, or multipart with a file part and optional email and rating fields.',
        tags,
      },
    },
    async (req: Req, reply) => {
      const hash = target(req);
      const { image, fields } = await readUpload(req);
      const rawRating = (
        fields['rating'] ??
        fields['r'] ??
        firstString(req.query['r'] ?? req.query['rating']) ??
        'g'
      ).toLowerCase();
      if (!RATINGS.includes(rawRating as Rating)) throw badRequest('rating must be one of g, pg, r, x');
      const email = fields['email'] ?? firstString(req.headers['x-avatar-email']) ?? null;
      try {
        const stored = await uploads!.put(hash.hex, hash.kind, email, image, rawRating as Rating);
        req.log.info(
          { sha256: stored.sha256, rating: stored.rating, width: stored.width },
          'avatar uploaded',
        );
        return reply.code(201).send({
          sha256: stored.sha256,
          md5: stored.md5,
          rating: stored.rating,
          size: stored.width,
          url: `${ctx.urls.avatar}/avatar/${hash.hex}`,
        });
      } catch (err) {
        if (err instanceof UploadError) throw new AppError('BAD_IMAGE', err.status, err.message);
        throw err;
      }
    },
  );

  app.delete<Route>(
    '/avatar/:file',
    {
      onRequest: [adminLimit, adminOnly],
      config,
      schema: { summary: 'Delete the uploaded avatar of a hash (admin token)', tags },
    },
    async (req: Req, reply) => {
      const hash = target(req);
      if (!(await uploads!.delete(hash.hex, hash.kind))) throw notFound('no uploaded avatar for this hash');
      req.log.info({ hash: hash.hex }, 'avatar deleted');
      return reply.code(204).send();
    },
  );
}

/**
 * A DiceBear style the operator has not installed: 501 naming the install line, so whoever tries
 * the URL learns what to run (an optional dependency; docs/avatar.md).
 */
function notInstalled(err: DicebearMissing): AppError {
  return new AppError('DICEBEAR_NOT_INSTALLED', 501, err.message);
}

function firstString(v: unknown): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' && s !== '' ? s : undefined;
}
