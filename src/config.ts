// The one config schema: server + shared infra + a section per utility. Sources, highest first:
// CLI flags > DEVUTIL_* env > config file (JSON or YAML) > defaults. Nothing else reads process.env.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  bool,
  bytes,
  type Field,
  int,
  list,
  oneOf,
  type Section,
  type SectionValue,
  str,
  url,
} from './infra/schema.ts';
import { relaySection } from './relay/config.ts';
import { avatarSection } from './services/avatar/config.ts';
import { filesSection } from './services/files/config.ts';
import { imageSection } from './services/image/config.ts';
import { ipSection } from './services/ip/config.ts';
import { plantumlSection } from './services/plantuml/config.ts';
import { proxySection } from './services/proxy/config.ts';
import { telegramSection } from './services/telegram/config.ts';
import { webSection } from './services/web/config.ts';

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
  host: str('0.0.0.0', { doc: 'HTTP listen address' }),
  dataDir: str('./data', { doc: 'directory for stored files, caches and the relay identity' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public base URL used in links and rewritten redirects (default http://localhost:<port>)',
  }),
  trustProxy: list([], {
    item: cidrItem,
    doc: 'reverse proxies whose X-Forwarded-For/Forwarded are believed: IPs, CIDRs, loopback, private',
  }),
  forwardedHeader: oneOf('x-forwarded-for', ['x-forwarded-for', 'forwarded'] as const, {
    doc: 'which header the trusted proxies append the client address to',
  }),
  workers: str('1', {
    pattern: /^(auto|[1-9]\d{0,2})$/,
    hint: 'a number of processes or auto',
    doc: 'HTTP worker processes (node:cluster); auto = one per core',
  }),
  shutdownTimeoutMs: int(10_000, { min: 0, doc: 'how long SIGTERM waits for in-flight requests' }),
  bodyLimit: bytes(1024 * 1024, {
    min: 1024,
    doc: 'largest JSON/text request body (uploads have their own limit)',
  }),
  headersTimeoutMs: int(15_000, {
    min: 1000,
    doc: 'time a client has to send its request headers (slowloris guard)',
  }),
  requestTimeoutMs: int(3_600_000, { min: 0, doc: 'time a client has to send a whole request (0 = none)' }),
  keepAliveTimeoutMs: int(5_000, { min: 0, doc: 'idle keep-alive connection timeout' }),
  idleTimeoutMs: int(300_000, {
    min: 0,
    doc: 'a connection with no bytes moving either way for this long is closed (stalled clients; 0 = never)',
  }),
} satisfies Section;

export const logSection = {
  level: oneOf('info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    doc: 'log level',
  }),
} satisfies Section;

export const redisSection = {
  url: str('', {
    pattern: /^rediss?:\/\/\S+$/,
    hint: 'a redis:// or rediss:// URL',
    secret: true,
    doc: 'Redis for shared rate limits and caches across instances (empty = in-memory)',
  }),
  keyPrefix: str('devutil:', { doc: 'prefix for every Redis key' }),
  failMode: oneOf('open', ['open', 'closed'] as const, {
    doc: 'when Redis is unreachable, rate limits let requests through (open) or refuse them with 503 (closed)',
  }),
} satisfies Section;

export const metricsSection = {
  enabled: bool(true, { doc: 'serve Prometheus metrics at /metrics' }),
  token: str('', { secret: true, doc: 'if set, /metrics requires Authorization: Bearer <token>' }),
} satisfies Section;

export const SCHEMA = {
  server: serverSection,
  log: logSection,
  redis: redisSection,
  metrics: metricsSection,
  ip: ipSection,
  files: filesSection,
  image: imageSection,
  telegram: telegramSection,
  proxy: proxySection,
  plantuml: plantumlSection,
  avatar: avatarSection,
  relay: relaySection,
  web: webSection,
} as const;

type Schema = typeof SCHEMA;
export type Config = { readonly [S in keyof Schema]: SectionValue<Schema[S]> };
export type SectionName = keyof Schema;

const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();

/** The one environment variable name of a key. */
export function envName(section: string, key: string, field: Field<unknown>): string {
  if (field.env) return field.env;
  return section === 'server' ? `DEVUTIL_${snake(key)}` : `DEVUTIL_${snake(section)}_${snake(key)}`;
}

export interface ConfigSources {
  env?: Record<string, string | undefined>;
  /** Values from CLI flags, keyed `section.key`. */
  flags?: Record<string, string>;
  /** Path of a JSON or YAML file; when absent, DEVUTIL_CONFIG from env is used. */
  file?: string;
  /** Values for tests and embedders, keyed by section then key, applied like flags. */
  overrides?: { [S in SectionName]?: Partial<Record<keyof Schema[S], unknown>> };
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  ${problems.join('\n  ')}`,
    );
    this.problems = problems;
    this.name = 'ConfigError';
  }
}

function readFile(path: string, problems: string[]): Record<string, unknown> {
  try {
    const text = readFileSync(path, 'utf8');
    const data: unknown = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
    if (data === null || data === undefined) return {};
    if (typeof data !== 'object' || Array.isArray(data)) {
      problems.push(`${path}: expected a mapping of sections`);
      return {};
    }
    return data as Record<string, unknown>;
  } catch (err) {
    problems.push(`${path}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    return {};
  }
}

export interface LoadedConfig {
  config: Config;
  /** Non-fatal findings, such as an unknown DEVUTIL_* variable. */
  warnings: string[];
}

/** Builds the frozen config or throws one ConfigError that lists every bad value. */
export function loadConfig(src: ConfigSources = {}): LoadedConfig {
  const env = src.env ?? {};
  const problems: string[] = [];
  const warnings: string[] = [];
  const filePath = src.file ?? env['DEVUTIL_CONFIG'];
  const file = filePath ? readFile(resolve(filePath), problems) : {};
  const known = new Set<string>(['DEVUTIL_CONFIG']);
  const flagsSeen = new Set<string>();
  const out: Record<string, Record<string, unknown>> = {};

  for (const [sname, fields] of Object.entries(SCHEMA) as [string, Section][]) {
    const fileSection = file[sname];
    if (
      fileSection !== undefined &&
      (typeof fileSection !== 'object' || fileSection === null || Array.isArray(fileSection))
    ) {
      problems.push(`${filePath}: section "${sname}" must be a mapping`);
    }
    const fsec = (typeof fileSection === 'object' && fileSection !== null ? fileSection : {}) as Record<
      string,
      unknown
    >;
    for (const k of Object.keys(fsec)) {
      if (!(k in fields)) problems.push(`${filePath}: unknown key "${sname}.${k}"`);
    }
    const values: Record<string, unknown> = {};
    const overrides = (src.overrides?.[sname as SectionName] ?? {}) as Record<string, unknown>;
    for (const [key, field] of Object.entries(fields)) {
      const name = envName(sname, key, field);
      known.add(name);
      const flag = src.flags?.[`${sname}.${key}`];
      if (flag !== undefined) flagsSeen.add(`${sname}.${key}`);
      let raw: unknown;
      let where: string;
      if (key in overrides) [raw, where] = [overrides[key], `${sname}.${key}`];
      else if (flag !== undefined) [raw, where] = [flag, `--${sname === 'server' ? '' : `${sname}.`}${key}`];
      else if (env[name] !== undefined) [raw, where] = [env[name], name];
      else if (key in fsec) [raw, where] = [fsec[key], `${filePath}: ${sname}.${key}`];
      else {
        values[key] = field.default;
        continue;
      }
      // Overrides may pass already-typed values (arrays, objects) straight through the parser.
      const r = field.parse(raw);
      if (r.ok) values[key] = r.value;
      else problems.push(`${where}: ${r.error}`);
    }
    out[sname] = values;
  }
  for (const f of Object.keys(src.flags ?? {})) {
    if (!flagsSeen.has(f)) problems.push(`unknown option ${f}`);
  }
  for (const name of Object.keys(env)) {
    if (name.startsWith('DEVUTIL_') && !known.has(name))
      warnings.push(`unknown environment variable ${name} ignored`);
  }
  if (problems.length) throw new ConfigError(problems);
  const server = out['server'] as Record<string, unknown>;
  if (server['publicUrl'] === '')
    server['publicUrl'] = `http://localhost:${server['port'] === 0 ? 8080 : server['port']}`;
  return { config: deepFreeze(out) as unknown as Config, warnings };
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** The effective config as a plain object with secrets masked (for `devutil config`). */
export function describeConfig(config: Config): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [sname, fields] of Object.entries(SCHEMA) as [string, Section][]) {
    const sec = (config as unknown as Record<string, Record<string, unknown>>)[sname] ?? {};
    out[sname] = {};
    for (const [key, field] of Object.entries(fields)) {
      const v = sec[key];
      out[sname][key] = field.secret && v !== '' && v !== undefined ? '********' : v;
    }
  }
  return out;
}

/** Every key with its env name, type, default and description (README reference, `devutil --help`). */
export function configReference(): {
  section: string;
  key: string;
  env: string;
  kind: string;
  default: unknown;
  doc: string;
}[] {
  const rows = [];
  for (const [sname, fields] of Object.entries(SCHEMA) as [string, Section][]) {
    for (const [key, field] of Object.entries(fields)) {
      rows.push({
        section: sname,
        key,
        env: envName(sname, key, field),
        kind: field.kind,
        default: field.default,
        doc: field.doc,
      });
    }
  }
  return rows;
}
