// The one config schema: server + shared infra + a section per utility (from its definition in
// services/index.ts). Sources, highest first: CLI flags > DEVUTIL_* env > config file (JSON or
// YAML) > defaults. Nothing else reads process.env.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import {
  egressSection,
  logSection,
  metricsSection,
  redisSection,
  serverSection,
  storageSection,
  tracingSection,
} from './config-sections.ts';
import { type Field, hostName, type Section, type SectionValue } from './infra/config/schema.ts';
import type { ServiceDef } from './services/define.ts';
import { SERVICES } from './services/index.ts';

const CORE = {
  server: serverSection,
  log: logSection,
  redis: redisSection,
  metrics: metricsSection,
  tracing: tracingSection,
  egress: egressSection,
  storage: storageSection,
} as const;

type ServiceSchema = { [D in (typeof SERVICES)[number] as D['name']]: D['config'] };
type Schema = typeof CORE & ServiceSchema;

/** The sections of a server built with these definitions: the shared ones, then one per utility. */
export function schemaOf(services: readonly ServiceDef[]): Record<string, Section> {
  const out: Record<string, Section> = { ...CORE };
  for (const d of services) {
    if (d.name in out) throw new Error(`two config sections are named "${d.name}"`);
    const section = d.formerly ? formerSection(d.config, d.formerly) : d.config;
    // A utility's own host forms its public URL: a host name (and port), nothing else.
    const host = d.host ? section['host'] : undefined;
    out[d.name] = host ? { ...section, host: hostName(host as Field<string>) } : section;
  }
  return out;
}

/** A renamed section: each key not moved on its own is still read under the section's former name. */
function formerSection(section: Section, former: string): Section {
  const out: Record<string, Field<unknown>> = {};
  for (const [key, field] of Object.entries(section))
    out[key] = field.formerly ? field : { ...field, formerly: `${former}.${key}` };
  return out as Section;
}

export const SCHEMA = schemaOf(SERVICES) as Schema;
export type Config = { readonly [S in keyof Schema]: SectionValue<Schema[S]> };
export type SectionName = keyof Schema;

const snake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();

function derivedEnvName(section: string, key: string): string {
  return section === 'server' ? `DEVUTIL_${snake(key)}` : `DEVUTIL_${snake(section)}_${snake(key)}`;
}

/** The one environment variable name of a key. */
export function envName(section: string, key: string, field: Field<unknown>): string {
  return field.env ?? derivedEnvName(section, key);
}

/** What `devutil config` prints in place of a set secret; refused on load, so it never becomes one. */
export const MASK = '********';

export interface ConfigSources {
  env?: Record<string, string | undefined>;
  /** Values from CLI flags, keyed `section.key`. */
  flags?: Record<string, string>;
  /** Path of a JSON or YAML file; when absent, DEVUTIL_CONFIG from env is used. */
  file?: string;
  /** Values for tests and embedders, keyed by section then key, applied like flags. */
  overrides?: { [S in SectionName]?: Partial<Record<keyof Schema[S], unknown>> };
  /** The utility definitions whose sections are read (default: services/index.ts). */
  services?: readonly ServiceDef[];
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

// Loaded when a YAML file is read: the parser is 70-odd modules that a start from env alone (or a
// JSON file) never needs.
const parseYaml = (text: string): unknown =>
  (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);

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

type Found = { raw: unknown; where: string };

/** A parse error without the value it quotes (the schema's messages end with `, got <value>`). */
function secretError(error: string): string {
  const got = error.indexOf(', got ');
  return `${got === -1 ? 'invalid value' : error.slice(0, got)} (the value is secret: not shown)`;
}

/** Builds the frozen config or throws one ConfigError that lists every bad value. */
export function loadConfig(src: ConfigSources = {}): LoadedConfig {
  const env = src.env ?? {};
  const schema = src.services ? schemaOf(src.services) : (SCHEMA as Record<string, Section>);
  const problems: string[] = [];
  const warnings: string[] = [];
  const filePath = src.file ?? env['DEVUTIL_CONFIG'];
  const file = filePath ? readFile(resolve(filePath), problems) : {};
  const known = new Set<string>(['DEVUTIL_CONFIG']);
  const flagsSeen = new Set<string>();
  const out: Record<string, Record<string, unknown>> = {};

  // Keys a file section may hold: its own and those later moved out of it (files.backend).
  const fileKeys = new Map<string, Set<string>>();
  for (const [sname, fields] of Object.entries(schema)) {
    for (const [key, field] of Object.entries(fields)) {
      for (const [s, k] of [[sname, key], field.formerly?.split('.') ?? []]) {
        if (s && k) fileKeys.set(s, (fileKeys.get(s) ?? new Set()).add(k));
      }
    }
  }
  const fileSections: Record<string, Record<string, unknown>> = {};
  for (const [sname, keys] of fileKeys) {
    const sec = file[sname];
    if (sec === undefined) continue;
    if (typeof sec !== 'object' || sec === null || Array.isArray(sec)) {
      problems.push(`${filePath}: section "${sname}" must be a mapping`);
      continue;
    }
    fileSections[sname] = sec as Record<string, unknown>;
    for (const k of Object.keys(sec)) {
      if (!keys.has(k)) problems.push(`${filePath}: unknown key "${sname}.${k}"`);
    }
  }

  // One key's value by precedence; at each level the current name before the one it replaced.
  const levels: ((s: string, k: string, env: string) => Found | undefined)[] = [
    (s, k) => {
      const o = (src.overrides as Record<string, Record<string, unknown>> | undefined)?.[s];
      return o && k in o ? { raw: o[k], where: `${s}.${k}` } : undefined;
    },
    (s, k) => {
      const f = src.flags?.[`${s}.${k}`];
      return f === undefined ? undefined : { raw: f, where: `--${s === 'server' ? '' : `${s}.`}${k}` };
    },
    (_s, _k, name) => (env[name] === undefined ? undefined : { raw: env[name], where: name }),
    (s, k) => {
      const f = fileSections[s];
      return f && k in f ? { raw: f[k], where: `${filePath}: ${s}.${k}` } : undefined;
    },
  ];

  for (const [sname, fields] of Object.entries(schema)) {
    const values: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(fields)) {
      // A key moved to another section (files.backend -> storage.backend) is still read under its
      // former name, just below the new one at each level, with a warning naming the new one.
      const names: [string, string, string][] = [[sname, key, envName(sname, key, field)]];
      const [oldS, oldK] = field.formerly?.split('.') ?? [];
      if (oldS && oldK) names.push([oldS, oldK, derivedEnvName(oldS, oldK)]);
      for (const [s, k, name] of names) {
        known.add(name);
        if (src.flags?.[`${s}.${k}`] !== undefined) flagsSeen.add(`${s}.${k}`);
      }
      for (const [s, k, name] of names.slice(1)) {
        for (const hit of levels.map((level) => level(s, k, name))) {
          const now = hit?.where === name ? envName(sname, key, field) : `${sname}.${key}`;
          if (hit) warnings.push(`${hit.where} is deprecated: use ${now} instead`);
        }
      }
      let found: Found | undefined;
      for (const level of levels) {
        for (const [s, k, name] of names) found ??= level(s, k, name);
        if (found) break;
      }
      for (const name of field.fallbackEnv ?? []) {
        if (!found && env[name]) found = { raw: env[name], where: name };
      }
      if (!found) {
        values[key] = field.default;
        continue;
      }
      if (field.secret && found.raw === MASK) {
        problems.push(`${found.where}: ${MASK} stands for a secret in printed configs; give the real value`);
        continue;
      }
      // Overrides may pass already-typed values (arrays, objects) straight through the parser.
      const r = field.parse(found.raw);
      if (r.ok) values[key] = r.value;
      // A secret's message names the variable and what was expected, never the value given.
      else problems.push(`${found.where}: ${field.secret ? secretError(r.error) : r.error}`);
    }
    out[sname] = values;
  }
  for (const f of Object.keys(src.flags ?? {})) {
    if (!flagsSeen.has(f)) problems.push(`unknown option ${f}`);
  }
  for (const name of Object.keys(env)) {
    if (name.startsWith('DEVUTIL_') && !known.has(name)) {
      const near = nearest(name, known);
      warnings.push(`unknown environment variable ${name} ignored${near ? ` (did you mean ${near}?)` : ''}`);
    }
  }
  // Settings that are only wrong together, reported with the rest (one line, no stack).
  const storage = out['storage'];
  if (storage && storage['backend'] === 's3' && storage['s3Bucket'] === '')
    problems.push(
      'DEVUTIL_STORAGE_S3_BUCKET: required when DEVUTIL_STORAGE_BACKEND=s3 (the bucket to store blobs in)',
    );
  const redis = out['redis'];
  const sentinels = Array.isArray(redis?.['sentinels']) ? redis['sentinels'].length : 0;
  if (redis?.['url'] && sentinels)
    problems.push(
      'DEVUTIL_REDIS_URL and DEVUTIL_REDIS_SENTINELS: give one of them (the sentinels find the primary)',
    );
  if (redis && !sentinels && redis['sentinels'] !== undefined)
    for (const [k, env] of [
      ['username', 'DEVUTIL_REDIS_USERNAME'],
      ['password', 'DEVUTIL_REDIS_PASSWORD'],
      ['sentinelPassword', 'DEVUTIL_REDIS_SENTINEL_PASSWORD'],
    ] as const)
      if (redis[k])
        problems.push(
          `${env}: only used with DEVUTIL_REDIS_SENTINELS (with DEVUTIL_REDIS_URL, credentials go in the URL)`,
        );
  const admin = out['admin'];
  if (admin?.['oidcIssuer']) {
    if (admin['oidcClientId'] === '')
      problems.push('DEVUTIL_ADMIN_OIDC_CLIENT_ID: required when DEVUTIL_ADMIN_OIDC_ISSUER is set');
    // Without a list every account at the provider (a whole Google, say) would be an operator.
    if (
      (admin['oidcAllowedUsers'] as string[]).length + (admin['oidcAllowedGroups'] as string[]).length ===
      0
    )
      problems.push(
        'DEVUTIL_ADMIN_OIDC_ALLOWED_USERS: set it or DEVUTIL_ADMIN_OIDC_ALLOWED_GROUPS when DEVUTIL_ADMIN_OIDC_ISSUER is set (who may sign in)',
      );
    // Plain http only for a provider the operator mapped to a known address (a local test provider).
    const issuer = new URL(admin['oidcIssuer'] as string);
    const mapped = ((out['egress']?.['resolve'] as string[] | undefined) ?? []).some((r) =>
      r.toLowerCase().startsWith(`${issuer.hostname.toLowerCase()}=`),
    );
    if (issuer.protocol === 'http:' && !mapped)
      problems.push(
        'DEVUTIL_ADMIN_OIDC_ISSUER: must be https (http only for a host mapped by DEVUTIL_EGRESS_RESOLVE)',
      );
  }
  if (problems.length) throw new ConfigError(problems);
  const server = out['server'] as Record<string, unknown>;
  if (server['publicUrl'] === '')
    server['publicUrl'] = `http://localhost:${server['port'] === 0 ? 8080 : server['port']}`;
  return { config: deepFreeze(out) as unknown as Config, warnings };
}

/** The known name closest to a mistyped one, if it is close enough to be a typo; else null. */
export function nearest(name: string, known: Iterable<string>): string | null {
  let best: string | null = null;
  let bestD = Math.min(3, Math.floor(name.length / 6));
  for (const k of known) {
    const d = distance(name, k, bestD);
    if (d <= bestD && (best === null || d < bestD)) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

/** Levenshtein distance, giving up (returning max + 1) once it must exceed `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let low = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      low = Math.min(low, v);
    }
    if (low > max) return max + 1;
    prev = cur;
  }
  return prev[b.length]!;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * The effective config as a plain object that loadConfig takes back as a file (`devutil config >
 * cfg.json`): sizes, durations and rates in their written form, secrets masked.
 */
export function describeConfig(
  config: Config,
  services?: readonly ServiceDef[],
): Record<string, Record<string, unknown>> {
  const schema = services ? schemaOf(services) : (SCHEMA as Record<string, Section>);
  const out: Record<string, Record<string, unknown>> = {};
  for (const [sname, fields] of Object.entries(schema)) {
    const sec = (config as unknown as Record<string, Record<string, unknown>>)[sname] ?? {};
    out[sname] = {};
    for (const [key, field] of Object.entries(fields)) {
      const v = sec[key];
      out[sname][key] = field.secret && v !== '' && v !== undefined ? MASK : printed(field, v);
    }
  }
  return out;
}

/** The values of every field marked secret that is set (masked in logs wherever they appear). */
export function configSecrets(config: Config, services?: readonly ServiceDef[]): string[] {
  const schema = services ? schemaOf(services) : (SCHEMA as Record<string, Section>);
  const out: string[] = [];
  for (const [sname, fields] of Object.entries(schema)) {
    const sec = (config as unknown as Record<string, Record<string, unknown>>)[sname] ?? {};
    for (const [key, field] of Object.entries(fields)) {
      const v = sec[key];
      if (!field.secret || typeof v !== 'string' || v === '') continue;
      // A URL (redis.url) is secret for its password only; the host stays readable in logs.
      const u = URL.canParse(v) && /^[a-z][a-z0-9+.-]*:\/\//i.test(v) ? new URL(v) : null;
      if (!u) out.push(v);
      else if (u.password) {
        out.push(u.password);
        try {
          out.push(decodeURIComponent(u.password));
        } catch {} // not percent-encoded: the raw form is enough
      }
    }
  }
  return out;
}

function printed(field: Field<unknown>, value: unknown): unknown {
  return field.format ? field.format(value) : value;
}

/**
 * Every key with its env name (and the one it replaced), type, default as written and description
 * (docs/configuration.md, `devutil config --reference`).
 */
export function configReference(services?: readonly ServiceDef[]): {
  section: string;
  key: string;
  env: string;
  formerly?: string;
  /** Variables other programs share, read when nothing else sets the key. */
  fallbackEnv?: readonly string[];
  kind: string;
  default: unknown;
  /** The default as documentation states it: machine-dependent ones in words. */
  shownDefault?: string;
  doc: string;
}[] {
  const schema = services ? schemaOf(services) : (SCHEMA as Record<string, Section>);
  const rows = [];
  for (const [sname, fields] of Object.entries(schema)) {
    for (const [key, field] of Object.entries(fields)) {
      const [oldS, oldK] = field.formerly?.split('.') ?? [];
      rows.push({
        section: sname,
        key,
        env: envName(sname, key, field),
        ...(oldS && oldK ? { formerly: derivedEnvName(oldS, oldK) } : {}),
        ...(field.fallbackEnv ? { fallbackEnv: field.fallbackEnv } : {}),
        kind: field.kind,
        default: printed(field, field.default),
        ...(field.shownDefault ? { shownDefault: field.shownDefault } : {}),
        doc: field.doc,
      });
    }
  }
  return rows;
}
