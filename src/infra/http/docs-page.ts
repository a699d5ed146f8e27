// The API reference page (/docs, Swagger UI) built on its first request, not at start: the page's
// plugins (@fastify/swagger-ui, @fastify/static, send, glob, yaml) were about a tenth of
// `devutil serve`'s start-up CPU, for a page few servers are ever asked for. On first use a
// private Fastify instance gets the page's routes (under the same prefix, reading this server's
// OpenAPI document); the routes here forward each request to it and send its answer through this
// server's reply, so the server's own hooks (request ids, headers, access log) still apply.

import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Headers of the private instance's answer that this server's reply sets itself. */
const OWN = new Set(['content-length', 'transfer-encoding', 'connection', 'date', 'keep-alive']);

export function docsPage(app: FastifyInstance, prefix: string, options: () => FastifySwaggerUiOptions): void {
  let page: Promise<FastifyInstance> | undefined;
  const build = async () => {
    const [{ default: Fastify }, { default: swaggerUi }] = await Promise.all([
      import('fastify'),
      import('@fastify/swagger-ui'),
      app.openapiReady(),
    ]);
    const side = Fastify({ logger: false });
    // Swagger UI needs a plugin named @fastify/swagger before it (what fastify-plugin's metadata
    // says): this one hands it this server's document.
    const source = Object.assign(
      async (i: FastifyInstance) => {
        i.decorate('swagger', ((o?: { yaml?: boolean }) =>
          app.swagger(o as never)) as FastifyInstance['swagger']);
      },
      { [Symbol.for('skip-override')]: true, [Symbol.for('plugin-meta')]: { name: '@fastify/swagger' } },
    );
    await side.register(source);
    await side.register(swaggerUi, { ...options(), routePrefix: prefix });
    await side.ready();
    return side;
  };
  app.addHook('onClose', async () => {
    if (page) await (await page.catch(() => null))?.close();
  });

  const forward = async (req: FastifyRequest, reply: FastifyReply) => {
    page ??= build();
    const side = await page.catch((err) => {
      page = undefined; // the next request tries again
      throw err;
    });
    // HEAD as GET: this server's HEAD handling drops the body and keeps its length.
    const r = await side.inject({ method: 'GET', url: req.url, headers: req.headers });
    // The private instance's 404 is this server's, in the envelope /docs has here.
    if (r.statusCode === 404) return reply.callNotFound();
    for (const [k, v] of Object.entries(r.headers)) if (v !== undefined && !OWN.has(k)) reply.header(k, v);
    return reply.code(r.statusCode).send(r.rawPayload);
  };
  const hidden = { schema: { hide: true } };
  app.get(prefix, hidden, forward);
  app.get(`${prefix}/*`, hidden, forward);
}
