// GET /rest/api/v1/image (docs/protocols/public-interface.md §4) and GET /rest/api/v1/image/list (Picsum's
// /v2/list, docs/protocols/picsum.md §4, in the v1 envelope), both with ?category=<subdirectory>. Thin:
// the route table; the handlers (validate, ask the ImageService, set caching headers) are in
// handlers.ts and list.ts, loaded on the first request (infra/http/lazy.ts).
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { lazyImpl } from '../../infra/http/lazy.ts';
import { PreparedMemo } from '../../infra/http/prepared-response.ts';
import type { ImageDeps } from './handlers.ts';
import { MAX_TEXT } from './placeholder.ts';
import type { ImageService } from './service.ts';

const str = (description: string) => ({ type: 'string', description }) as const;
const imageQuery = {
  type: 'object',
  properties: {
    id: str('same id, same image (byte for byte) while the source set is unchanged'),
    width: str('output width; alone, the height follows the source proportions'),
    height: str('output height; alone, the width follows the source proportions'),
    grayscale: str('presence flag'),
    blur: str('Gaussian blur 1..10; bare `blur` means 5'),
    format: { type: 'string', description: 'webp (default), jpeg, png or avif' },
    category: str('only images of this subdirectory of the image directory (see /list)'),
    text: str(
      `a placeholder with this text (up to ${MAX_TEXT} characters; empty: the size) instead of a picture`,
    ),
    bg: str('placeholder background, hex rgb/rrggbb/rrggbbaa (default cccccc)'),
    fg: str('placeholder text colour (default: black or white, whichever reads on bg)'),
    label: str('0 hides the placeholder size label'),
    orientation: str('landscape, portrait, or auto (from Client Hints / User-Agent): turns the size'),
  },
} as const;

const listQuery = {
  type: 'object',
  properties: {
    page: str('page number, from 1'),
    limit: str('items per page, 1..100 (default 30)'),
    category: str('only the images of this category'),
  },
} as const;

type Q = { Querystring: Record<string, unknown> };

export async function imageRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  svc: ImageService,
): Promise<void> {
  const cfg = ctx.config.image;
  // No hook at all when the limit is off: the cached path is hot enough for a no-op hook to show.
  const limited = cfg.rateLimit.limit > 0 ? { onRequest: ctx.limiter.hook('image', cfg.rateLimit) } : {};
  const d: ImageDeps = { cfg, svc, prepared: new PreparedMemo(), base: ctx.urls.base };
  const impl = lazyImpl('the image handlers', async () => {
    const [{ serveImage }, { listImages }] = await Promise.all([
      import('./handlers.ts'),
      import('./list.ts'),
    ]);
    return { serveImage, listImages };
  });

  app.get<Q>(
    '/rest/api/v1/image',
    {
      ...limited,
      schema: {
        summary: 'Random image (WebP by default, 1920x1080)',
        tags: ['image'],
        querystring: imageQuery,
        produces: ['image/webp', 'image/jpeg', 'image/png', 'image/avif'],
      },
    },
    impl.handler((i) => (req, reply) => i.serveImage(d, req, reply)),
  );
  app.get<Q>(
    '/rest/api/v1/image/list',
    {
      ...limited,
      schema: {
        summary: 'The image catalogue of the first source that has one',
        tags: ['image'],
        querystring: listQuery,
      },
    },
    impl.handler((i) => (req, reply) => i.listImages(d, req, reply)),
  );
}
