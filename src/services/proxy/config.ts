// Reverse proxy section. DEVUTIL_PROXY_HOST gives the proxy its own virtual host; RESOLVE,
// UPSTREAM_CA and ALLOW are fixed names (outside scripts point the proxy at fixture servers).
import { isIP } from 'node:net';
import { bool, budget, bytes, duration, int, list, rate, str, url } from '../../infra/config/schema.ts';
import { resolveItem } from '../../infra/egress/netguard.ts';
import { accelPrefix } from '../../infra/http/accel.ts';
import { ecosystemFields } from './ecosystems/config.ts';

/** The v1 allow-list (docs/protocols/reverse-proxy.md §2); `*.` entries match whole subdomain labels only. */
export const DEFAULT_ALLOW = [
  'github.com',
  '*.github.com',
  'githubusercontent.com',
  '*.githubusercontent.com',
  'objects.githubusercontent.com',
  'deb.debian.org',
  'security.debian.org',
  '*.debian.org',
  'python.org',
  '*.python.org',
  'pypi.org',
  'files.pythonhosted.org',
  'secure.gravatar.com',
];

const HOST = /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/;

function allowItem(s: string): string | null {
  return HOST.test(s.toLowerCase()) ? null : 'expected a host name or *.domain';
}

function cidrItem(s: string): string | null {
  const [addr, bits, ...rest] = s.split('/');
  const v = isIP(addr ?? '');
  if (!v || rest.length) return 'expected an IP or a CIDR';
  if (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (v === 4 ? 32 : 128)))
    return 'bad prefix length';
  return null;
}

/**
 * The proxy's section; `ecosystems` are the names DEVUTIL_PROXY_ECOSYSTEMS may list (the registry in
 * ecosystems/index.ts), and each ecosystem's own settings are spread in from ecosystems/config.ts.
 */
export const proxySection = (ecosystems: readonly string[]) => ({
  enabled: bool(true, { doc: 'serve the reverse proxy (under /proxy/ and on its own host)' }),
  host: str('', { doc: 'Host header that routes every path to the proxy (e.g. proxy.example.com)' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL of the proxy (default: http(s)://<host> or <public_url>/proxy)',
  }),
  allow: list(DEFAULT_ALLOW, {
    item: allowItem,
    doc: 'upstream hosts the proxy may reach; *.x for subdomains',
  }),
  resolve: list([], {
    item: resolveItem,
    doc: 'host=address:port overrides for the proxy only, on top of egress.resolve (which every outbound client uses)',
  }),
  upstreamCa: str('', { doc: 'PEM file of extra CAs trusted for upstream TLS (fixtures, private mirrors)' }),
  allowHttp: bool(true, { doc: 'accept http:// targets (always fetched over https)' }),
  receivePack: bool(false, { doc: 'allow git push (git-receive-pack) through the proxy' }),
  maxResponseBytes: bytes(2 * 1024 ** 3, { min: 1, doc: 'largest upstream response relayed (413 above)' }),
  maxRequestBytes: bytes(100 * 1024 ** 2, { min: 1, doc: 'largest request body forwarded (git POSTs)' }),
  maxRewriteBytes: bytes(32 * 1024 ** 2, { min: 1024, doc: 'largest index/LFS body rewritten in memory' }),
  maxRedirects: int(5, { min: 0, max: 20, doc: 'redirect hops followed internally' }),
  maxPathLength: int(2048, { min: 64, doc: 'longest accepted target URL' }),
  headersTimeoutMs: duration(30_000, {
    unit: 'ms',
    min: 100,
    doc: 'time the upstream has to send response headers',
  }),
  bodyTimeoutMs: duration(60_000, { unit: 'ms', min: 100, doc: 'longest idle gap in an upstream body' }),
  connectTimeoutMs: duration(10_000, { unit: 'ms', min: 100, doc: 'upstream TCP+TLS connect timeout' }),
  upstreamConnections: int(128, { min: 1, doc: 'keep-alive connections per upstream host' }),
  rateLimit: rate('1200/min', { doc: 'per-client request budget' }),
  // One address pulling a terabyte a day is public accelerators' top complaint (gh-proxy#152); 100 GiB
  // a day is far above any person or CI job. A total cap depends on the operator's traffic plan.
  clientBytes: budget('100GiB/day', {
    doc: 'bytes one client address (IPv6: its /64) may pull per window, e.g. 20GiB/day (off = no budget)',
  }),
  totalBytes: budget('off', { doc: 'bytes all clients together may pull per window, e.g. 3TiB/month' }),
  maxConcurrent: int(32, {
    min: 0,
    doc: 'concurrent proxied requests per client (an IPv6 client: its /64; 0 = unlimited)',
  }),
  clients: list([], { item: cidrItem, doc: 'client CIDR allow-list (empty = everyone)' }),
  secret: str('', {
    secret: true,
    pattern: /^[A-Za-z0-9_-]{8,}$/,
    hint: '8+ characters of [A-Za-z0-9_-]',
    doc: 'if set, every proxied URL must start with /t/<secret>/ (private deployments)',
  }),
  cacheMaxBytes: bytes(10 * 1024 ** 3, { doc: 'on-disk cache for immutable content (0 = off)' }),
  cacheMemoryBytes: bytes(64 * 1024 ** 2, {
    doc: 'memory for small hot cache objects (each at most 256 KiB; 0 = disk only)',
  }),
  cacheDir: str('', { doc: 'cache directory (default <data_dir>/proxy-cache)' }),
  accelRedirect: accelPrefix(
    'behind nginx: answer cache hits sent from disk with X-Accel-Redirect to <prefix><body file> so nginx sends the bytes (an internal location aliasing the cache directory; docs/deployment.md)',
  ),
  indexTtlSec: duration(600, {
    unit: 's',
    min: 0,
    doc: 'how long PyPI index pages and Debian Release files stay fresh',
  }),
  ecosystems: list([], {
    item: (s) => (ecosystems.includes(s) ? null : `unknown ecosystem; known: ${ecosystems.join(', ')}`),
    doc: `ecosystem profiles served beside the host-path form (${ecosystems.join(', ')}); none by default`,
  }),
  ...ecosystemFields,
});
