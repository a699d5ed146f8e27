// The shared sections of the config schema: HTTP server, log, Redis, metrics, outbound requests and
// the blob store (files and avatars). Each utility's own section lives in its folder (services/<name>/config.ts).
import { isIP } from 'node:net';
import {
  bool,
  bytes,
  duration,
  type Field,
  int,
  list,
  oneOf,
  type Section,
  str,
  url,
} from './infra/config/schema.ts';
import { cidrItem as rangeItem, resolveItem } from './infra/egress/netguard.ts';
import { noProxyItem, normaliseProxyUrl } from './infra/egress/route.ts';

const TRUST_KEYWORDS = ['loopback', 'private', 'linklocal', 'uniquelocal'];

function cidrItem(s: string): string | null {
  if (TRUST_KEYWORDS.includes(s)) return null;
  const [addr, bits, ...rest] = s.split('/');
  const v = isIP(addr ?? '');
  if (!v || rest.length) return 'expected an IP, a CIDR or one of loopback, private, linklocal, uniquelocal';
  if (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (v === 4 ? 32 : 128)))
    return 'bad prefix length';
  return null;
}

export const serverSection = {
  port: int(8080, { min: 0, max: 65535, doc: 'HTTP listen port (0 = any free port)' }),
  host: str('::', {
    doc: 'HTTP listen address; :: is every IPv6 and IPv4 address (IPv4 callers arrive IPv4-mapped), 0.0.0.0 when the machine has no IPv6',
  }),
  dataDir: str('./data', { doc: 'directory for stored files, caches and the relay identity' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public base URL used in links and rewritten redirects (default http://localhost:<port>)',
  }),
  trustProxy: list([], {
    item: cidrItem,
    doc: 'reverse proxies whose X-Forwarded-For/Forwarded are believed: IPs, CIDRs, loopback, private',
  }),
  clientIpv6Prefix: int(64, {
    min: 1,
    max: 128,
    doc: 'IPv6 clients are one client per network of this prefix length for every limit (rate limits, byte budgets, quotas of concurrency and connections); IPv4 clients per address',
  }),
  forwardedHeader: oneOf('x-forwarded-for', ['x-forwarded-for', 'forwarded'] as const, {
    doc: 'which header the trusted proxies append the client address to',
  }),
  workers: str('1', {
    pattern: /^(auto|[1-9]\d{0,2})$/,
    hint: 'a number of processes or auto',
    doc: 'HTTP worker processes (node:cluster); auto = one per core',
  }),
  shutdownTimeoutMs: duration(10_000, {
    unit: 'ms',
    min: 0,
    doc: 'the most SIGTERM takes, counted from the signal and the drain delay included: what is still in flight then is cut (and logged) and the process exits',
  }),
  drainDelayMs: duration(5_000, {
    unit: 'ms',
    min: 0,
    doc: 'after SIGTERM, how long /readyz answers 503 while the server still serves (every answer then closes its connection) before it stops listening; longer than the load balancer takes to notice (its health-check interval times its fall count) and than its upstream keep-alive timeout. SIGINT and a second signal skip it',
  }),
  bodyLimit: bytes(1024 * 1024, {
    min: 1024,
    doc: 'largest JSON/text request body (uploads have their own limit)',
  }),
  jsonMaxDepth: int(64, {
    min: 2,
    max: 1000,
    doc: 'deepest array/object nesting accepted in a JSON request body (400 above)',
  }),
  headersTimeoutMs: duration(15_000, {
    unit: 'ms',
    min: 1000,
    doc: 'time a client has to send its request headers (slowloris guard)',
  }),
  requestTimeoutMs: duration(3_600_000, {
    unit: 'ms',
    min: 0,
    doc: 'time a client has to send a whole request (0 = none)',
  }),
  keepAliveTimeoutMs: duration(5_000, { unit: 'ms', min: 0, doc: 'idle keep-alive connection timeout' }),
  bodyTimeoutMs: duration(10_000, {
    unit: 'ms',
    min: 0,
    doc: 'time a client has to send a small request body (JSON, text, diagram source) once its headers are in; file uploads and proxied bodies have requestTimeoutMs (0 = none)',
  }),
  maxConnections: int(0, {
    min: 0,
    doc: 'open client connections per process, HTTP and relay together; more are closed at accept (0 = derived from the open-files limit: (limit - 64) / 3, 320 for 1024)',
  }),
  maxPipelined: int(16, {
    min: 1,
    max: 1024,
    doc: 'requests one connection may pipeline ahead of its answers; past that the connection is not read until answers are done (queued requests wait for their turn before any work)',
  }),
  maxConnectionsPerClient: int(64, {
    min: 0,
    doc: 'open connections one client address may hold (IPv6: per /64), HTTP and relay together; trusted proxies are held only to the total (0 = no per-client cap)',
  }),
  idleTimeoutMs: duration(300_000, {
    unit: 'ms',
    min: 0,
    doc: 'a connection with no bytes moving either way for this long is closed (stalled clients; 0 = never)',
  }),
  fastLane: bool(true, {
    doc: 'answer repeated GET/HEAD cache hits and the caller-IP routes before the router, with the same limits, headers, metrics and logs (docs/operations.md, "The fast lane"); false sends every request through the router',
  }),
} satisfies Section;

export const logSection = {
  level: oneOf('info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    doc: 'log level',
  }),
  format: oneOf('auto', ['auto', 'pretty', 'json'] as const, {
    doc: 'log lines: auto = readable lines when stdout is a terminal, JSON otherwise; pretty or json to force one',
  }),
} satisfies Section;

/** host:port, [v6]:port, or a host alone (the sentinel port 26379). */
function sentinelItem(s: string): string | null {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(s);
  if (!m) return 'expected host:port';
  if (m[1] !== undefined && isIP(m[1]) !== 6) return 'expected an IPv6 address in brackets';
  if (m[3] !== undefined && !(Number(m[3]) >= 1 && Number(m[3]) <= 65535)) return 'port out of range';
  return null;
}

export const redisSection = {
  url: str('', {
    pattern: /^rediss?:\/\/\S+$/,
    hint: 'a redis:// or rediss:// URL',
    secret: true,
    doc: 'Redis for shared rate limits and caches across instances (empty = in-memory)',
  }),
  sentinels: list([], {
    item: sentinelItem,
    doc: 'Redis Sentinel addresses (host:port, port 26379 when left out), instead of redis.url: the primary named redis.sentinelName is asked of them and followed across failovers',
  }),
  sentinelName: str('mymaster', {
    pattern: /^[A-Za-z0-9._-]{1,64}$/,
    hint: 'the master name the sentinels monitor',
    doc: 'the master name the sentinels monitor (SENTINEL MONITOR <name> ...)',
  }),
  username: str('', {
    doc: 'ACL user of the Redis primary and replicas, with redis.sentinels (with redis.url it is in the URL)',
  }),
  password: str('', {
    secret: true,
    doc: 'password of the Redis primary and replicas, with redis.sentinels (with redis.url it is in the URL)',
  }),
  sentinelPassword: str('', {
    secret: true,
    doc: 'password of the sentinels themselves (their requirepass), when they have one',
  }),
  keyPrefix: str('devutil:', { doc: 'prefix for every Redis key' }),
  failMode: oneOf('open', ['open', 'closed'] as const, {
    doc: 'when Redis is unreachable, rate limits and byte budgets let requests through (open) or refuse them with 503 (closed); the files quota and Max-Downloads always refuse',
  }),
  commandTimeoutMs: duration(3000, {
    unit: 'ms',
    min: 100,
    doc: 'a Redis command not answered within this long counts as failed (a frozen Redis); long enough that a loaded machine does not trip it, and a false timeout fails safe',
  }),
} satisfies Section;

export const metricsSection = {
  enabled: bool(true, { doc: 'serve Prometheus metrics at /metrics' }),
  token: str('', { secret: true, doc: 'if set, /metrics requires Authorization: Bearer <token>' }),
} satisfies Section;

// OpenTelemetry traces (infra/observe/tracing.ts), off until a collector URL is set. The env names
// are OpenTelemetry's own (what collectors' and platforms' deploy templates set), not DEVUTIL_*.
export const tracingSection = {
  endpoint: url('', {
    optional: true,
    // Sent only to the collector, never shown or written (a vendor may want a query).
    anyChars: true,
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    doc: 'OTLP/HTTP collector base URL: traces go to <url>/v1/traces; empty (and no tracesEndpoint) = tracing off',
  }),
  tracesEndpoint: url('', {
    optional: true,
    // Sent only to the collector, never shown or written (a vendor may want a query).
    anyChars: true,
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    doc: 'full OTLP/HTTP traces URL, used as is (wins over endpoint)',
  }),
  protocol: oneOf('http/protobuf', ['http/protobuf', 'http/json'] as const, {
    env: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    doc: 'OTLP encoding over HTTP (gRPC is not supported)',
  }),
  headers: str('', {
    secret: true,
    env: 'OTEL_EXPORTER_OTLP_HEADERS',
    pattern: /^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/,
    hint: 'name=value pairs separated by commas',
    doc: 'headers sent with every export, name=value,... (a collector API key)',
  }),
  serviceName: str('devutil', { env: 'OTEL_SERVICE_NAME', doc: 'service.name of every span' }),
  sampler: oneOf(
    'parentbased_always_on',
    [
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ] as const,
    {
      env: 'OTEL_TRACES_SAMPLER',
      doc: "which requests are traced (parentbased_* follow the caller's traceparent)",
    },
  ),
  samplerArg: str('', {
    env: 'OTEL_TRACES_SAMPLER_ARG',
    pattern: /^\s*(0(\.\d+)?|1(\.0+)?|\.\d+)\s*$/,
    hint: 'a ratio from 0 to 1',
    doc: 'the share of traces kept by the traceidratio samplers (empty = 1)',
  }),
  scheduleDelayMs: int(5000, {
    env: 'OTEL_BSP_SCHEDULE_DELAY',
    min: 1,
    max: 600_000,
    doc: 'milliseconds between two exports of finished spans',
  }),
  exportTimeoutMs: int(10_000, {
    env: 'OTEL_EXPORTER_OTLP_TIMEOUT',
    min: 1,
    max: 600_000,
    doc: 'milliseconds one export may take before it is dropped',
  }),
} satisfies Section;

/** An outbound proxy URL: http(s) with optional credentials, or host:port as HTTPS_PROXY often has it. */
function proxyUrl(o: Parameters<typeof str>[1]): Field<string> {
  return {
    ...str('', o),
    kind: 'proxy URL',
    parse(raw) {
      if (typeof raw !== 'string') return { ok: false, error: 'expected a proxy URL' };
      if (raw.trim() === '') return { ok: true, value: '' };
      const r = normaliseProxyUrl(raw);
      // `, got <value>` as the schema's own messages end: a secret field's message drops it.
      return 'url' in r ? { ok: true, value: r.url } : { ok: false, error: `${r.error}, got ${raw}` };
    },
  };
}

export const egressSection = {
  resolve: list([], {
    item: resolveItem,
    doc: 'host=address:port overrides (curl --resolve) for every outbound request; the only way an upstream may be on loopback (fixtures, a local Bot API server)',
  }),
  proxy: proxyUrl({
    secret: true,
    formerly: 'telegram.proxyUrl',
    fallbackEnv: ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'],
    doc: 'outbound HTTP(S) proxy for every upstream (proxy mirrors, avatars, diagrams, Telegram, single sign-on), e.g. http://user:pass@proxy:3128; each connection is a CONNECT tunnel (empty = direct)',
  }),
  noProxy: list([], {
    item: noProxyItem,
    fallbackEnv: ['NO_PROXY', 'no_proxy'],
    doc: 'upstreams reached directly, not through egress.proxy: names (example.com and .example.com cover its subdomains), addresses, CIDRs, host:port, or *',
  }),
  allowCidrs: list([], {
    item: rangeItem,
    doc: 'reserved or private ranges outbound requests may reach after all (split-horizon DNS, NAT64 64:ff9b::/96, a corporate resolver), e.g. 10.20.0.0/16 (docs/operations.md)',
  }),
  dnsNegativeTtlMs: duration(10_000, {
    unit: 'ms',
    min: 0,
    max: 3_600_000,
    doc: 'how long a name that failed to resolve (offline, no such name) fails at once without a new lookup (0 = look up every time)',
  }),
} satisfies Section;

export const storageSection = {
  backend: oneOf('fs', ['fs', 's3'] as const, {
    formerly: 'files.backend',
    doc: 'blob store of files and avatars: fs (under the data directory) or s3 (any S3-compatible store)',
  }),
  s3Endpoint: url('', {
    optional: true,
    formerly: 'files.s3Endpoint',
    doc: 'S3 endpoint URL (empty = AWS for the region)',
  }),
  s3Bucket: str('', { formerly: 'files.s3Bucket', doc: 'S3 bucket (required when backend=s3)' }),
  s3Region: str('us-east-1', { formerly: 'files.s3Region', doc: 'S3 region (R2: auto)' }),
  s3AccessKeyId: str('', {
    formerly: 'files.s3AccessKeyId',
    doc: 'S3 access key id (empty = the SDK default credential chain)',
  }),
  s3SecretAccessKey: str('', {
    secret: true,
    formerly: 'files.s3SecretAccessKey',
    doc: 'S3 secret access key',
  }),
  s3ForcePathStyle: bool(false, {
    formerly: 'files.s3ForcePathStyle',
    doc: 'path-style URLs (MinIO, s3rver); AWS and R2 use virtual hosts',
  }),
  s3TimeoutMs: duration(10_000, {
    unit: 'ms',
    min: 100,
    formerly: 'files.s3TimeoutMs',
    doc: 'S3 socket inactivity timeout; a down or hung store answers 503 after about twice this',
  }),
  s3AbortIncompleteAfterSec: duration(0, {
    unit: 's',
    doc: "incomplete S3 multipart uploads under devutil's namespaces (files/, file-limits/, uploads/, avatars/, telegram/, .staging/) older than this are aborted at start-up and by the files sweeper; 0 = derived: server.requestTimeoutMs plus 15 minutes (files.uploadExpirySec plus 15 minutes when requestTimeoutMs is 0), at least 1 hour",
  }),
  s3PresignedDownloads: bool(false, {
    doc: 'answer file downloads with a 302 to a short-lived presigned S3 URL (same name, type, Range) when the client can take the stored bytes; the client must reach the S3 endpoint',
  }),
  s3PresignExpirySec: duration(300, {
    unit: 's',
    min: 1,
    max: 7 * 24 * 3600,
    doc: 'lifetime of a presigned download URL (S3 checks it when the download starts, so long downloads are not cut)',
  }),
} satisfies Section;
