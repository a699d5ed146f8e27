// For ecosystems whose clients speak plain HTTP to one upstream (npm, Go modules, Hugging Face):
// a mount `/proxy/<name>/...` mapped path by path onto the upstream, through the host-path form's
// machinery (forward(): redirects, header filtering, size caps, body rewrites; the shared cache's
// policy; the gate's budget, concurrency, log line and metered send). Each profile brings its own
// host allow-list, the policy of its storage hosts (reached by its redirects) and the URL prefixes
// whose links are rewritten onto its mount.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { AppError, forbidden } from '../../../infra/http/errors.ts';
import type { Subjects } from '../../../infra/observe/usage/usage.ts';
import { type ForwardOptions, forward } from '../forward.ts';
import { SAFETY_HEADERS } from '../headers.ts';
import { Links } from '../links.ts';
import { check, type Decision, type Route } from '../policy.ts';
import { AllowList, parseTarget, TargetError } from '../target.ts';

type ProxyConfig = ServiceContext['config']['proxy'];

import type { EcosystemApi } from './define.ts';
import { MountError } from './mount-error.ts';

export { MountError };

/** A request below the mount, mapped onto the upstream. */
export interface MountTarget {
  url: URL;
  route: Route;
}

/** A request the profile answers itself (the checksum database probe). */
export interface LocalAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface UpstreamProfile {
  /** The upstream hosts it may reach: its own allow-list (`*.` entries on a label boundary). */
  hosts(cfg: ProxyConfig): string[];
  /** Upstream URL prefixes (ending in `/`) rewritten onto the mount in headers and bodies. */
  origins(cfg: ProxyConfig): string[];
  /** Maps `rest` (the raw path and query below the mount, from `/`); throws MountError to refuse. */
  target(method: string, rest: string, cfg: ProxyConfig): MountTarget | LocalAnswer;
  /** Policy of its hosts reached by a redirect; null = not one of its hosts. */
  decide?(host: string, method: string, url: URL, cfg: ProxyConfig): Decision | null;
  /** What a request was for, for the dashboard's top packages and files. */
  subjects?(url: URL, cfg: ProxyConfig): Subjects | undefined;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
// C0 controls, space, DEL and backslash never appear in a request a package client sends.
const BAD_BYTES = /[\x00-\x20\x7f\\]/;

export function serveUpstream(api: EcosystemApi, mount: string, title: string, p: UpstreamProfile): void {
  const cfg = api.ctx.config.proxy;
  const allow = new AllowList(p.hosts(cfg));
  const base = api.fwd.links.base;
  const fwd: ForwardOptions = {
    ...api.fwd,
    // The upstream's own URLs map onto the mount; its other hosts (storage, CDNs) onto
    // `<mount>/_/<host>/...`, served here too: `_` starts no npm name, Go module path or Hub id.
    links: new Links(
      `${base}${mount}/_`,
      allow,
      p.origins(cfg).map((o): [string, string] => [o, `${base}${mount}/`]),
    ),
    hostPolicy: (host, method, url) => p.decide?.(host, method, url, cfg) ?? null,
  };
  const cache = api.cache;
  if (cache) fwd.viaCache = (r) => cache.serve(r, fwd, api.ctx.logger);

  /** `/<host>/<path>` of one of its other hosts, parsed like the host-path form, under its policy. */
  const storage = (method: string, raw: string): MountTarget => {
    const t = parseTarget(raw, { maxLength: cfg.maxPathLength, allowHttp: false });
    if (!allow.has(t.host)) throw new MountError(403, `host not allowed: ${t.host}`);
    const d = p.decide?.(t.host, method === 'OPTIONS' ? 'GET' : method, t.url, cfg);
    if (!d) throw new MountError(403, `host not served here: ${t.host}`);
    if (!d.ok) throw new MountError(d.status, d.reason);
    return { url: t.url, route: d.route };
  };

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const rest = api.rawPath(req).slice(mount.length) || '/';
    if (rest.length > cfg.maxPathLength) throw new AppError('BAD_TARGET', 400, 'request path is too long');
    if (BAD_BYTES.test(rest))
      throw new AppError('BAD_TARGET', 400, 'control characters or backslash in the path');
    let t: MountTarget | LocalAnswer;
    try {
      t = rest.startsWith('/_/') ? storage(req.method, rest.slice(2)) : p.target(req.method, rest, cfg);
    } catch (err) {
      if (err instanceof MountError || err instanceof TargetError)
        throw new AppError('BAD_TARGET', err.status, err.message);
      throw err;
    }
    if ('status' in t) return reply.code(t.status).headers(t.headers).headers(SAFETY_HEADERS).send(t.body);
    const host = t.url.hostname;
    if (!allow.has(host)) throw forbidden(`host not allowed: ${host}`);
    if (req.method === 'OPTIONS')
      return reply
        .code(204)
        .headers({
          ...SAFETY_HEADERS,
          'access-control-allow-methods': t.route.methods.join(', '),
          'access-control-allow-headers':
            'Range, If-Range, If-None-Match, If-Modified-Since, Content-Type, Authorization, Accept',
          'access-control-max-age': '600',
        })
        .send();
    const d = check(req.method, t.route);
    if (!d.ok)
      throw new AppError('NOT_ALLOWED', d.status, d.reason, d.allow ? { headers: { allow: d.allow } } : {});
    const x = await api.gate.open(
      req,
      reply,
      { host, path: t.url.pathname },
      api.ctx.usage ? p.subjects?.(t.url, cfg) : undefined,
    );
    const fr = {
      method: req.method,
      url: t.url,
      route: d.route,
      headers: req.headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? null : req.raw,
      signal: x.signal,
    };
    return api.gate.relay(x, reply, () => (cache ? cache.serve(fr, fwd, req.log) : forward(fwd, fr)));
  };

  api.route({
    method: [...METHODS],
    url: `${mount}/*`,
    summary: `${title} (mapped onto the upstream)`,
    config: { largeBody: true },
    handler,
  });
}
