// The avatar handlers: an avatar by hash, a GitHub account's, and the operator's upload and
// delete. Each takes the AvatarDeps avatarRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { AppError, badRequest, forbidden, notFound, unavailable } from '../../infra/http/errors.ts';
import { QueueFull } from '../../infra/limits/fair-queue.ts';
import { checkAdmin, readUpload } from './admin.ts';
import type { AvatarAnswers } from './answer.ts';
import { DicebearMissing } from './gen/dicebear.ts';
import { parseLogin } from './github.ts';
import { parseFile, parseQuery, RATINGS, type Rating } from './request.ts';
import { parseHash } from './seed.ts';
import type { AvatarService } from './service.ts';
import { UploadError, type Uploads } from './uploads.ts';

const MAX_SIZE = 2048;

export interface AvatarDeps {
  cfg: Config['avatar'];
  svc: AvatarService;
  uploads: Uploads | null;
  answers: AvatarAnswers;
  /** The avatar host's public base URL (an upload answers its URL). */
  base: string;
}

export type AvatarRoute = { Params: { file?: string }; Querystring: Record<string, unknown> };
export type AvatarReq = FastifyRequest<AvatarRoute>;

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

/** GET /avatar/<hash>[.ext]: uploaded, mirrored or generated, with the Gravatar query. */
export async function getAvatar(d: AvatarDeps, req: AvatarReq, reply: FastifyReply) {
  const { hashText, format } = parseFile(req.params.file ?? '');
  const q = parseQuery(hashText, format, req.query, { maxSize: MAX_SIZE, fallback: d.cfg.default });
  const name = q.hash?.hex ?? 'avatar';
  const client = req.clientKey;
  try {
    return await d.answers.send(req, reply, await d.svc.resolve(q, client), name);
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
    const fallback = await d.svc.resolve({ ...q, force: true }, client).catch((e: unknown) => {
      throw e instanceof DicebearMissing ? notInstalled(e) : e;
    });
    return d.answers.send(req, reply, fallback, name);
  }
}

/** GET /avatar/github/<login>: a GitHub account's picture; the rest of the query as for a hash. */
export async function getGithubAvatar(d: AvatarDeps, req: AvatarReq, reply: FastifyReply) {
  const { hashText, format } = parseFile(req.params.file ?? '');
  const login = parseLogin(hashText);
  if (!login) throw badRequest('expected a GitHub login: letters, digits and single hyphens, at most 39');
  const q = parseQuery(`github:${login}`, format, req.query, {
    maxSize: MAX_SIZE,
    fallback: d.cfg.default,
  });
  try {
    return await d.answers.send(req, reply, await d.svc.resolveGithub(login, q, req.clientKey), login);
  } catch (err) {
    if (err instanceof QueueFull) throw unavailable('busy rendering avatars, try again shortly', 1);
    if (err instanceof DicebearMissing) throw notInstalled(err);
    throw err;
  }
}

/** The onRequest check of the operator's routes: uploads on, and the admin token. */
export async function adminOnly(d: AvatarDeps, req: FastifyRequest): Promise<void> {
  if (!d.uploads || !d.cfg.adminToken) throw forbidden('uploads are disabled on this server');
  checkAdmin(req.headers.authorization, d.cfg.adminToken);
}

function target(req: AvatarReq) {
  const parsed = parseHash(parseFile(req.params.file ?? '').hashText);
  if (!parsed) throw badRequest('the path must end in an MD5 or SHA-256 hex hash');
  return parsed;
}

/** PUT /avatar/<hash>: the operator's upload (the image as the body, or multipart with fields). */
export async function putAvatar(d: AvatarDeps, req: AvatarReq, reply: FastifyReply) {
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
    const stored = await d.uploads!.put(hash.hex, hash.kind, email, image, rawRating as Rating);
    req.log.info({ sha256: stored.sha256, rating: stored.rating, width: stored.width }, 'avatar uploaded');
    return reply.code(201).send({
      sha256: stored.sha256,
      md5: stored.md5,
      rating: stored.rating,
      size: stored.width,
      url: `${d.base}/avatar/${hash.hex}`,
    });
  } catch (err) {
    if (err instanceof UploadError) throw new AppError('BAD_IMAGE', err.status, err.message);
    throw err;
  }
}

/** DELETE /avatar/<hash>: the operator removes an upload. */
export async function deleteAvatar(d: AvatarDeps, req: AvatarReq, reply: FastifyReply) {
  const hash = target(req);
  if (!(await d.uploads!.delete(hash.hex, hash.kind))) throw notFound('no uploaded avatar for this hash');
  req.log.info({ hash: hash.hex }, 'avatar deleted');
  return reply.code(204).send();
}
