// GET /rest/api/v1/image/list: one page of the image catalogue (every source's entries, or one
// category's), with Link headers to its neighbours and the categories with their counts.
import type { FastifyReply } from 'fastify';
import { badRequest } from '../../infra/http/errors.ts';
import { type ImageDeps, type QueryReq, unknownCategory } from './handlers.ts';
import { ParamError, parseCategory } from './params.ts';
import { type ImageService, UnknownCategoryError } from './service.ts';

/** The category parameter of a request, or a 400 for a name that cannot be a category. */
function categoryOf(q: Record<string, unknown>): string | undefined {
  try {
    return parseCategory(q) ?? undefined;
  } catch (err) {
    if (err instanceof ParamError) throw badRequest(err.message, 'BAD_IMAGE_PARAMS');
    throw err;
  }
}

function positive(v: unknown, def: number, max: number): number {
  const n = typeof v === 'string' && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
  return Number.isFinite(n) && n >= 1 ? Math.min(n, max) : def;
}

/** GET /rest/api/v1/image/list: one page of the catalogue, with Link headers to its neighbours. */
export async function listImages(d: ImageDeps, req: QueryReq, reply: FastifyReply) {
  const { svc } = d;
  const page = positive(req.query['page'], 1, 1_000_000);
  const limit = positive(req.query['limit'], 30, 100);
  const category = categoryOf(req.query);
  let c: ReturnType<ImageService['list']>;
  try {
    c = svc.list((page - 1) * limit, limit, category);
  } catch (err) {
    if (err instanceof UnknownCategoryError) throw unknownCategory();
    throw err;
  }
  const base = `${d.base}/rest/api/v1/image`;
  const inCategory = category === undefined ? '' : `&category=${encodeURIComponent(category)}`;
  const links: string[] = [];
  if (page > 1) links.push(`<${base}/list?page=${page - 1}&limit=${limit}${inCategory}>; rel="prev"`);
  if (page * limit < c.total)
    links.push(`<${base}/list?page=${page + 1}&limit=${limit}${inCategory}>; rel="next"`);
  if (links.length) reply.header('link', links.join(', '));
  reply.header('cache-control', 'no-cache').header('access-control-expose-headers', 'Link');
  const images = c.items.map((e) => ({
    id: e.id,
    width: e.width ?? null,
    height: e.height ?? null,
    author: e.author ?? null,
    license: e.license ?? null,
    url: e.url ?? null,
    downloadUrl: `${base}?id=${encodeURIComponent(e.id)}`,
    category: e.category ?? null,
  }));
  const categories = svc.categories().map((k) => ({
    name: k.name,
    total: k.total,
    downloadUrl: `${base}?category=${encodeURIComponent(k.name)}`,
  }));
  return {
    status: 1,
    message: 'success',
    data: {
      source: c.source,
      total: c.total,
      page,
      limit,
      images,
      ...(category === undefined ? {} : { category }),
      categories,
    },
  };
}
