// Reverse proxy: an allow-listed accelerator for git, apt, pip, curl and browsers (seed 1.3, 4.7).
import { BlockList, isIPv4 } from 'node:net';
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../infra/context.ts';
import { MOUNTS } from '../../infra/hosts.ts';
import { Links } from './links.ts';
import { proxyRoutes } from './routes.ts';
import { AllowList } from './target.ts';
import { createAgent, parseResolve } from './upstream.ts';

function clientFilter(cidrs: readonly string[]): (ip: string) => boolean {
  if (cidrs.length === 0) return () => true;
  const bl = new BlockList();
  for (const c of cidrs) {
    const [addr = '', bits] = c.split('/');
    const type = isIPv4(addr) ? 'ipv4' : 'ipv6';
    if (bits === undefined) bl.addAddress(addr, type);
    else bl.addSubnet(addr, Number(bits), type);
  }
  return (ip) => bl.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6');
}

const proxy: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  const cfg = ctx.config.proxy;
  app.envelopes.mount(MOUNTS.proxy, 'text');
  const allow = new AllowList(cfg.allow);
  const base = cfg.secret ? `${ctx.urls.proxy}/t/${cfg.secret}` : ctx.urls.proxy;
  const agent = createAgent({
    resolve: parseResolve(cfg.resolve),
    caFile: cfg.upstreamCa,
    connectTimeoutMs: cfg.connectTimeoutMs,
    headersTimeoutMs: cfg.headersTimeoutMs,
    bodyTimeoutMs: cfg.bodyTimeoutMs,
  });
  app.addHook('onClose', async () => {
    await agent.close();
  });
  await proxyRoutes(app, ctx, {
    allow,
    cache: null,
    clientAllowed: clientFilter(cfg.clients),
    fwd: {
      agent,
      links: new Links(base, allow),
      maxRedirects: cfg.maxRedirects,
      maxResponseBytes: cfg.maxResponseBytes,
      maxRequestBytes: cfg.maxRequestBytes,
      maxRewriteBytes: cfg.maxRewriteBytes,
      receivePack: cfg.receivePack,
      apiGithub: cfg.allow.includes('api.github.com'),
    },
  });
};

export default proxy;
