// Serves the enabled ecosystem profiles (DEVUTIL_PROXY_ECOSYSTEMS) inside the proxy plugin: each
// route at /proxy/<path> (so on the proxy's own host at /<path>), under /t/<secret>/ when the proxy
// has a secret (registered as /t/:secret/, checked per request: ../access.ts), and at the base
// host's root for those that need it, always behind the proxy's access checks. What the ecosystem
// then does with a request goes through api.gate.
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { ACCESS_SEGMENT, afterAccess } from '../access.ts';
import type { ProxyCache, ProxyStore } from '../cache.ts';
import type { ProxyGate } from '../exchange.ts';
import type { ForwardOptions } from '../forward.ts';
import type { EcosystemApi, EcosystemDef, EcosystemRoute } from './define.ts';

export interface Shared {
  mount: string;
  gate: ProxyGate;
  fwd: ForwardOptions;
  store: ProxyStore | null;
  cache: ProxyCache | null;
}

/** The definitions DEVUTIL_PROXY_ECOSYSTEMS names, in the order of the registry list. */
export function enabledEcosystems(all: readonly EcosystemDef[], names: readonly string[]): EcosystemDef[] {
  return all.filter((d) => names.includes(d.name));
}

export async function mountEcosystems(
  app: FastifyInstance,
  ctx: ServiceContext,
  shared: Shared,
  defs: readonly EcosystemDef[],
): Promise<void> {
  const secret = ctx.config.proxy.secret;
  const taken = new Map<string, string>();
  // The access prefix, checked after the gate's own hooks (rate limit first: guesses cost too).
  const access: onRequestHookHandler = (req, _reply, done) => {
    try {
      afterAccess((req.raw.url ?? '/').slice(shared.mount.length), secret);
      done();
    } catch (err) {
      done(err as Error);
    }
  };
  for (const def of defs) {
    const gated = secret !== '' && !def.ownAccess;
    const prefix = `${shared.mount}${gated ? ACCESS_SEGMENT : ''}`;
    for (const p of def.paths) {
      if (!/^\/[a-z0-9_-]+$/i.test(p))
        throw new Error(`ecosystem ${def.name}: path ${p} must be one segment without a dot`);
      const other = taken.get(p);
      if (other) throw new Error(`ecosystems ${other} and ${def.name} both claim ${p}`);
      taken.set(p, def.name);
      if (def.envelope) {
        app.envelopes.mount(`${prefix}${p}`, def.envelope);
        if (def.atRoot) app.envelopes.mount(p, def.envelope);
      }
    }
    const api: EcosystemApi = {
      app,
      ctx,
      gate: shared.gate,
      agent: shared.fwd.agent,
      fwd: shared.fwd,
      store: shared.store,
      cache: shared.cache,
      rawPath: (req: FastifyRequest) => {
        const raw = req.raw.url ?? '/';
        if (!raw.startsWith(`${shared.mount}/`)) return raw;
        const rest = raw.slice(shared.mount.length);
        return gated ? afterAccess(rest, secret) : rest;
      },
      route: (r: EcosystemRoute) => {
        if (!def.paths.some((p) => r.url === p || r.url.startsWith(`${p}/`)))
          throw new Error(`ecosystem ${def.name}: route ${r.url} is outside its paths`);
        const urls = [`${prefix}${r.url}`, ...(def.atRoot ? [r.url] : [])];
        for (const url of urls)
          app.route({
            method: r.method,
            url,
            exposeHeadRoute: false,
            schema: { summary: `${def.title}: ${r.summary}`, tags: ['proxy'] },
            ...(r.config ? { config: r.config } : {}),
            onRequest: gated && url !== r.url ? [...shared.gate.onRequest, access] : shared.gate.onRequest,
            handler: r.handler,
          });
      },
    };
    await (await def.load()).default(api);
  }
}
