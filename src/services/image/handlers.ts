// The image handlers: a picture (or a placeholder) for GET /rest/api/v1/image; the catalogue page
// for /list is in list.ts. Each takes the ImageDeps imageRoutes builds once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import {
  AppError,
  alreadyLogged,
  badGateway,
  badRequest,
  notFound,
  unavailable,
} from '../../infra/http/errors.ts';
import type { PreparedMemo } from '../../infra/http/prepared-response.ts';
import { QueueFull } from '../../infra/limits/fair-queue.ts';
import {
  CONTENT_TYPES,
  EXTENSIONS,
  type ImageOptions,
  outputSize,
  ParamError,
  parseQuery,
} from './params.ts';
import {
  guessOrientation,
  HINTS,
  orient,
  type Placeholder,
  parseOrientation,
  parsePlaceholder,
} from './placeholder.ts';
import { type ImageService, NoSourceError, UnknownCategoryError } from './service.ts';

export interface ImageDeps {
  cfg: Config['image'];
  svc: ImageService;
  /** The answer for one cached body, worked out once per body and kind (random, by id, fallback). */
  prepared: PreparedMemo;
  /** The public base URL the catalogue's links are built on. */
  base: string;
}

export type QueryReq = FastifyRequest<{ Querystring: Record<string, unknown> }>;

export const unknownCategory = () => notFound('no such image category', 'IMAGE_NO_CATEGORY');

const safeName = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'image';

const maxAge = (cfg: Config['image'], degraded: boolean) =>
  `public, max-age=${degraded ? Math.min(60, cfg.maxAgeSec) : cfg.maxAgeSec}`;

/** GET /rest/api/v1/image: a picture from the sources, or a placeholder when ?text is given. */
export async function serveImage(d: ImageDeps, req: QueryReq, reply: FastifyReply) {
  const { cfg, svc } = d;
  let o: ImageOptions;
  let ph: Placeholder | null;
  let orientation: ReturnType<typeof parseOrientation>;
  try {
    o = parseQuery(req.query, cfg);
    ph = parsePlaceholder(req.query);
    orientation = parseOrientation(req.query);
  } catch (err) {
    if (err instanceof ParamError) throw badRequest(err.message, 'BAD_IMAGE_PARAMS');
    throw err;
  }
  if (orientation !== null) {
    const turned = orientation === 'auto' ? guessOrientation(req.headers) : orientation;
    o = orient(o, turned, cfg);
    reply.header('image-orientation', turned);
    if (orientation === 'auto')
      reply.header('accept-ch', HINTS.join(', ')).header('vary', [...HINTS, 'User-Agent'].join(', '));
  }
  if (ph) return placeholder(d, req, reply, ph, o);
  let r: Awaited<ReturnType<ImageService['serve']>>;
  try {
    r = await svc.serve(o, req.clientKey);
  } catch (err) {
    if (err instanceof QueueFull)
      throw unavailable('image service is busy, retry shortly', cfg.retryAfterSec, 'IMAGE_BUSY');
    if (err instanceof UnknownCategoryError) throw unknownCategory();
    if (err instanceof AppError) throw err;
    // The upstream origin failed and nothing after it could stand in: its fault, not ours (the
    // source's failure is on the warn line above; the answer is logged without a stack).
    if (err instanceof NoSourceError && err.upstream)
      throw badGateway('the image upstream failed', 'IMAGE_UPSTREAM');
    req.log.error({ err: { message: (err as Error).message } }, 'image request failed');
    throw alreadyLogged(
      reply,
      unavailable('no image source is available', cfg.retryAfterSec, 'IMAGE_UNAVAILABLE'),
    );
  }
  const random = o.id === null;
  const cache = r.cache === 'miss' ? 'MISS' : 'HIT';
  const variant = `${random ? 'random' : r.degraded ? 'fallback' : 'id'} ${cache}`;
  return d.prepared
    .get(r.body, variant, () => {
      const name = `${safeName(r.id)}-${r.width}x${r.height}${o.blur ? `-blur_${o.blur}` : ''}${o.grayscale ? '-grayscale' : ''}.${EXTENSIONS[o.format]}`;
      return {
        headers: {
          'content-type': r.contentType,
          'content-disposition': `inline; filename="${name}"`,
          'image-id': encodeURIComponent(r.id),
          'image-source': r.source,
          'access-control-allow-origin': '*',
          'access-control-expose-headers': 'Content-Type, Image-Id, Image-Source',
          'timing-allow-origin': '*',
          'x-cache': cache,
          // A random pick: the next request must not be answered from a cache (Picsum users' pain).
          ...(random
            ? { 'cache-control': 'no-store' }
            : // A fallback answer may change once the preferred source is back: cached briefly.
              { etag: r.etag, 'cache-control': maxAge(cfg, r.degraded) }),
        },
        modifiedSince: false,
        omitOn304: ['content-type', 'content-length'],
      };
    })
    .send(reply, req);
}

/** A placeholder of the asked size with its text. */
async function placeholder(
  d: ImageDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  ph: Placeholder,
  o: ImageOptions,
) {
  const { cfg } = d;
  const [w, h] = outputSize(o, cfg.defaultWidth, cfg.defaultHeight, cfg);
  let r: Awaited<ReturnType<ImageService['placeholder']>>;
  try {
    r = await d.svc.placeholder(ph, w, h, o.format, req.clientKey);
  } catch (err) {
    if (err instanceof QueueFull)
      throw unavailable('image service is busy, retry shortly', cfg.retryAfterSec, 'IMAGE_BUSY');
    throw err;
  }
  return d.prepared
    .get(r.body, 'placeholder', () => ({
      headers: {
        'content-type': CONTENT_TYPES[o.format],
        'content-disposition': `inline; filename="placeholder-${w}x${h}.${EXTENSIONS[o.format]}"`,
        'image-source': 'placeholder',
        'access-control-allow-origin': '*',
        'access-control-expose-headers': 'Content-Type, Image-Source, Image-Orientation',
        etag: r.etag,
        // Same query, same bytes: cacheable like an image by id.
        'cache-control': maxAge(cfg, false),
      },
      modifiedSince: false,
      omitOn304: ['content-type', 'content-length'],
    }))
    .send(reply, req);
}
