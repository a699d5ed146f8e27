// The OpenAPI document built on its first request, not at start: @fastify/swagger and what it
// loads (yaml, the schema resolver; about 90 modules) were on every start's path to the first
// answer, for a document few servers are asked for. At start this only keeps each route's options
// as @fastify/swagger's own onRoute hook would; on first use a private Fastify instance with
// @fastify/swagger is given the same routes (no validators or serializers compiled) and answers
// `swagger()` from then on, with the same document the plugin registered here would have built.

import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** Builds the OpenAPI document's source once; `swagger()` answers only after it resolved. */
    openapiReady(): Promise<void>;
  }
}

export function lazySwagger(options: FastifyDynamicSwaggerOptions) {
  return Object.assign(
    async (app: FastifyInstance) => {
      const routes: RouteOptions[] = [];
      const scopes: FastifyInstance[] = [app];
      app.addHook('onRoute', (route) => {
        routes.push(route);
      });
      app.addHook('onRegister', (scope) => {
        scopes.push(scope);
      });
      let side: Promise<FastifyInstance> | undefined;
      let built: FastifyInstance | undefined;
      const build = async () => {
        const [{ default: Fastify }, { default: swagger }] = await Promise.all([
          import('fastify'),
          import('@fastify/swagger'),
        ]);
        const doc = Fastify({ logger: false, exposeHeadRoutes: false });
        // Only the schemas are read: nothing is validated or serialized on this instance.
        doc.setValidatorCompiler(() => () => true);
        doc.setSerializerCompiler(() => (data) => JSON.stringify(data));
        const shared = new Map<string, unknown>();
        for (const s of scopes)
          for (const [id, schema] of Object.entries(s.getSchemas())) shared.set(id, schema);
        for (const schema of shared.values()) doc.addSchema(schema);
        await doc.register(swagger, options);
        await doc.register(async (i) => {
          for (const r of routes) {
            const { method, url, schema, config, constraints } = r;
            const links = (r as { links?: unknown }).links;
            i.route({
              method,
              url,
              handler: () => {},
              ...(schema ? { schema } : {}),
              ...(config ? { config } : {}),
              ...(constraints ? { constraints } : {}),
              ...(links ? { links } : {}),
            } as RouteOptions);
          }
        });
        await doc.ready();
        built = doc;
        return doc;
      };
      app.decorate('openapiReady', async () => {
        side ??= build().catch((err: unknown) => {
          side = undefined; // the next request tries again
          throw err;
        });
        await side;
      });
      app.decorate('swagger', ((o?: { yaml?: boolean }) => {
        if (!built) throw new Error('the OpenAPI document is built by openapiReady() first');
        return built.swagger(o as never);
      }) as FastifyInstance['swagger']);
      app.addHook('onClose', async () => {
        if (side) await (await side.catch(() => null))?.close();
      });
    },
    // Hooks and decorators on the instance it is registered on, as @fastify/swagger's are.
    { [Symbol.for('skip-override')]: true, [Symbol.for('plugin-meta')]: { name: 'devutil-openapi' } },
  );
}
