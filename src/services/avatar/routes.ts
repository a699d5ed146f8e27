// GET/HEAD /avatar/<hash>[.ext] and /avatar/ (Gravatar's image URL), plus the operator's PUT and
// DELETE for uploads. The route table: the handlers are handlers.ts, the answers answer.ts,
// parsing request.ts, the lookup order service.ts, storage uploads.ts. The handlers and answers
// load on the first avatar request (infra/http/lazy.ts), with the service and uploads (index.ts).
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { type LazyImpl, lazyImpl } from '../../infra/http/lazy.ts';
import type { AvatarDeps, AvatarReq, AvatarRoute } from './handlers.ts';
import type { AvatarService, Served } from './service.ts';
import type { Uploads } from './uploads.ts';

const config = { svc: 'avatar' };
const tags = ['avatar'];
const getDoc = {
  summary: 'Avatar for an MD5 or SHA-256 email hash (Gravatar query: s, d, r, f; .png/.jpg/.webp suffix)',
  description:
    'Uploaded here, else mirrored from the upstream, else the d= default (identicon, retro, monsterid, wavatar, robohash, mp, initials, blank, color, a DiceBear style as dicebear-<style>, 404 or an allowed URL). Without a hash: the default picture.',
  tags,
};

export function avatarRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  core: LazyImpl<{ svc: AvatarService; uploads: Uploads | null }>,
  served: (source: Served) => void,
): void {
  const cfg = ctx.config.avatar;
  // The handlers load with the service they answer from (index.ts): one load for both.
  const impl = lazyImpl('the avatar handlers', async () => {
    const [{ svc, uploads }, { AvatarAnswers }, handlers] = await Promise.all([
      core.get(),
      import('./answer.ts'),
      import('./handlers.ts'),
    ]);
    const d: AvatarDeps = {
      cfg,
      svc,
      uploads,
      answers: new AvatarAnswers(cfg, ctx.lane, uploads, served),
      base: ctx.urls.avatar,
    };
    return { ...handlers, d };
  });
  const limit = ctx.limiter.hook('avatar', cfg.rateLimit);
  const adminLimit = ctx.limiter.hook('avatar-admin', cfg.adminRateLimit);

  // No hook at all when unlimited: this is the hot path of every page that shows avatars.
  const getOpts = cfg.rateLimit.limit > 0 ? { onRequest: limit, config } : { config };
  for (const url of ['/avatar', '/avatar/', '/avatar/:file'])
    app.get<AvatarRoute>(
      url,
      { ...getOpts, schema: getDoc },
      impl.handler((i) => (req: AvatarReq, reply) => i.getAvatar(i.d, req, reply)),
    );

  app.get<AvatarRoute>(
    '/avatar/github/:file',
    {
      ...getOpts,
      schema: {
        summary: 'Avatar of a GitHub account (github.com/<user>.png, cached), with the Gravatar query',
        description: 'Unknown accounts and an unreachable GitHub get the d= default, seeded with the login.',
        tags,
      },
    },
    impl.handler((i) => (req: AvatarReq, reply) => i.getGithubAvatar(i.d, req, reply)),
  );

  // Budget and token are checked before the image is read, so only the admin can send a long upload.
  const admin = [
    adminLimit,
    async (req: AvatarReq) => {
      const i = impl.value ?? (await impl.get());
      return i.adminOnly(i.d, req);
    },
  ];
  app.put<AvatarRoute>(
    '/avatar/:file',
    {
      onRequest: admin,
      config: { ...config, largeBody: true },
      schema: {
        summary: 'Upload the avatar for a hash (admin: Authorization: Bearer DEVUTIL_AVATAR_ADMIN_TOKEN)',
        description:
          'The image as the body, or multipart with a file part and optional email and rating fields.',
        tags,
      },
    },
    impl.handler((i) => (req: AvatarReq, reply) => i.putAvatar(i.d, req, reply)),
  );
  app.delete<AvatarRoute>(
    '/avatar/:file',
    {
      onRequest: admin,
      config,
      schema: { summary: 'Delete the uploaded avatar of a hash (admin token)', tags },
    },
    impl.handler((i) => (req: AvatarReq, reply) => i.deleteAvatar(i.d, req, reply)),
  );
}
