// The container registry profile's routes: /v2/ on the proxy (and at the base host's root), the
// token endpoint, manifests, blobs and tag lists of the registries served, through the proxy's gate.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCapped } from '../../../../infra/egress/capped-body.ts';
import { evaluate } from '../../../../infra/http/conditional.ts';
import { AppError, alreadyLogged } from '../../../../infra/http/errors.ts';
import type { Exchange } from '../../exchange.ts';
import type { Upstream } from '../../forward.ts';
import { AllowList } from '../../target.ts';
import type { EcosystemPlugin } from '../define.ts';
import { ClientTokens, type Credential, challenge, UpstreamTokens } from './auth.ts';
import { Blobs } from './blobs.ts';
import { registryOrigin } from './definition.ts';
import { ociError } from './errors.ts';
import { Manifests } from './manifests.ts';
import { type OciRequest, parseRequest, Registries } from './reference.ts';
import { RegistryClient, upstreamRefusal } from './upstream.ts';

const API_VERSION = { 'docker-distribution-api-version': 'registry/2.0' };
const READ_ONLY = 'this registry mirror is read-only';

/** Spool files of blobs fetched without a disk cache: this process's own folder, others' if dead. */
async function spoolDir(dataDir: string): Promise<string> {
  const root = join(dataDir, 'oci-spool');
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const pid = Number(name);
    let alive = false;
    try {
      alive = Number.isInteger(pid) && pid > 0 && process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) await rm(join(root, name), { recursive: true, force: true });
  }
  return join(root, String(process.pid));
}

const plugin: EcosystemPlugin = async (api) => {
  const { ctx } = api;
  const cfg = ctx.config.proxy;
  const log = ctx.logger.child({ svc: 'proxy', eco: 'oci' });
  const regs = new Registries(cfg.ociRegistries);
  const allow = new AllowList([...regs.hosts(), ...cfg.ociAllow]);
  const creds = new Map<string, Credential>();
  const hub = regs.host('docker.io');
  if (hub && cfg.ociDockerhubUser && cfg.ociDockerhubToken)
    creds.set(hub, { user: cfg.ociDockerhubUser, token: cfg.ociDockerhubToken });
  else if (cfg.ociDockerhubUser || cfg.ociDockerhubToken)
    log.warn('DEVUTIL_PROXY_OCI_DOCKERHUB_USER and _TOKEN go together; pulling from Docker Hub anonymously');
  const tokens = new ClientTokens(cfg.secret);
  const upstream = new RegistryClient(
    api.agent,
    allow,
    new UpstreamTokens(api.agent, allow, creds, ctx.now),
    cfg.maxRedirects,
  );
  const manifests = new Manifests(api.store, upstream, {
    tagTtlMs: cfg.ociTagTtlSec * 1000,
    maxBytes: cfg.ociMaxManifestBytes,
    now: ctx.now,
  });
  const blobs = new Blobs(api.store, upstream, await spoolDir(ctx.dataDir), cfg.maxResponseBytes, log);
  await blobs.init();
  api.app.addHook('onClose', async () => {
    await rm(join(ctx.dataDir, 'oci-spool', String(process.pid)), { recursive: true, force: true });
  });
  // Clients are sent here for tokens: a public URL from config, never the request's Host.
  const realm = `${registryOrigin(ctx.urls).origin}/v2/token`;

  const unauthorized = (scope?: string) =>
    ociError(401, 'UNAUTHORIZED', 'authentication required', {
      headers: { 'www-authenticate': challenge(realm, scope) },
    });

  async function token(req: FastifyRequest, reply: FastifyReply) {
    const t = tokens.issue(req.headers.authorization, ctx.now());
    if (!t)
      throw ociError(401, 'UNAUTHORIZED', 'this mirror is private: log in with its password', {
        headers: { 'www-authenticate': 'Basic realm="devutil"' },
      });
    return reply
      .header('cache-control', 'no-store')
      .type('application/json')
      .send({
        token: t.token,
        access_token: t.token,
        expires_in: t.expiresIn,
        issued_at: new Date(ctx.now()).toISOString(),
      });
  }

  async function answer(
    r: Exclude<OciRequest, { kind: 'base' | 'token' }>,
    req: FastifyRequest,
  ): Promise<Upstream> {
    const url = new URL(`https://${r.name.host}/`);
    if (r.kind === 'blob') {
      const b = await blobs.serve(r.name, r.digest, { method: req.method, headers: req.headers });
      return { ...b, url };
    }
    if (r.kind === 'tags') {
      const query = r.query
        .split('&')
        .filter((p) => p && !p.startsWith('ns='))
        .join('&');
      const res = await upstream.request(r.name, 'GET', `tags/list${query ? `?${query}` : ''}`, {
        accept: 'application/json',
      });
      if (res.status !== 200) {
        res.body.resume();
        throw upstreamRefusal(res.status, res.headers, `tags of ${r.name.client}`);
      }
      const text = await readCapped(res.body, cfg.maxRewriteBytes, {
        declared: res.headers['content-length'],
      });
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'content-length': String(text.length),
      };
      // The next page, under the name this client uses.
      const link = res.headers['link'];
      const next = link && /<\/v2\/[^>?]+\/tags\/list(\?[^>]*)?>\s*;\s*rel="next"/.exec(link);
      if (next) headers['link'] = `</v2/${r.name.client}/tags/list${next[1] ?? ''}>; rel="next"`;
      return { status: 200, headers, body: null, text: req.method === 'HEAD' ? Buffer.alloc(0) : text, url };
    }
    const accept = req.headers.accept;
    const ref = r.digest?.text ?? (r.tag as string);
    if (req.method === 'HEAD') {
      const m = await manifests.peekCached(r.name, r.tag, r.digest, accept);
      if (!m)
        return {
          status: 200,
          ...(await manifests.head(r.name, ref, accept)),
          body: null,
          text: Buffer.alloc(0),
          url,
        };
      return {
        status: 200,
        headers: manifestHeaders(m.type, m.digest, m.body.length),
        body: null,
        text: Buffer.alloc(0),
        url,
      };
    }
    const m = await manifests.get(r.name, r.tag, r.digest, accept, log);
    const headers = manifestHeaders(m.type, m.digest, m.body.length);
    // As a cache (infra/http/conditional.ts): weak comparison, lists and *, If-Match left upstream.
    const v = { etag: headers['etag'] ?? null, lastModified: null };
    if (evaluate('GET', req.headers, v, { cache: true }) === 'not-modified')
      return { status: 304, headers, body: null, url };
    return { status: 200, headers, body: null, text: m.body, url };
  }

  async function handle(req: FastifyRequest, reply: FastifyReply) {
    reply.headers(API_VERSION);
    const r = parseRequest(api.rawPath(req), regs);
    if (r.kind === 'token') {
      if (req.method !== 'GET')
        throw ociError(405, 'UNSUPPORTED', 'the token endpoint answers GET', { headers: { allow: 'GET' } });
      return token(req, reply);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD')
      throw ociError(405, 'UNSUPPORTED', READ_ONLY, { headers: { allow: 'GET, HEAD' } });
    const auth = req.headers.authorization;
    if (r.kind === 'base') {
      if (!tokens.valid(auth, ctx.now())) throw unauthorized();
      return reply.type('application/json').send('{}');
    }
    if (!tokens.open && !tokens.valid(auth, ctx.now()))
      throw unauthorized(`repository:${r.name.client}:pull`);
    const what =
      r.kind === 'blob'
        ? `blobs/${r.digest.text}`
        : r.kind === 'tags'
          ? 'tags/list'
          : `manifests/${r.digest?.text ?? r.tag}`;
    const x = await api.gate.open(
      req,
      reply,
      { host: r.name.host, path: `/v2/${r.name.repo}/${what}` },
      { package: `oci/${r.name.registry}/${r.name.repo}` },
    );
    let up: Upstream;
    try {
      up = await answer(r, req);
      x.upstreamStatus = up.status;
    } catch (err) {
      throw failure(x, reply, err);
    }
    return api.gate.send(x, reply, up);
  }

  /** 4xx pass as they are; an upstream 5xx is reported once, on the exchange's log line. */
  function failure(x: Exchange, reply: FastifyReply, err: unknown): unknown {
    if (err instanceof AppError) {
      if (err.status >= 500) {
        x.failed(err);
        alreadyLogged(reply, err);
      }
      return err;
    }
    return api.gate.failure(x, reply, err) ?? err;
  }

  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
  api.route({ method: [...methods], url: '/v2', summary: 'registry API version check', handler: handle });
  api.route({
    method: [...methods],
    url: '/v2/*',
    summary: 'pull-through registry API: token, manifests, blobs, tags (read-only)',
    handler: handle,
  });
};

function manifestHeaders(type: string, digest: string, length: number): Record<string, string> {
  return {
    'content-type': type,
    'docker-content-digest': digest,
    'content-length': String(length),
    etag: `"${digest}"`,
  };
}

export default plugin;
