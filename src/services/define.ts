// What a utility is to the rest of the server: its one name, its config section, its plugin and,
// optionally, its own host name, its home page section and a listener beside the HTTP server.
// services/index.ts lists the definitions; config, server, host router, page and main read them.
// The config reads them before anything else is loaded (the CLI starts PlantUML's JVMs soon after
// it), so a definition imports its config section and nothing heavier: its plugin, page section,
// dashboard and listener are loaded when first asked for (src/prelaunch.test.ts checks what a
// start loads before the prelaunch).
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { Background } from '../background.ts';
import type { Config } from '../config.ts';
import type { ServiceContext } from '../context.ts';
import type { Section, SectionValue } from '../infra/config/schema.ts';
import type { PageSection } from '../page/section.ts';

export interface HostDef {
  /**
   * Path prefix of the utility's routes on the base host ('/proxy'). A request on its own host
   * (config `<name>.host`) is rewritten under it, so one routing table serves both addresses.
   */
  readonly mount: string;
  /**
   * Its URLs carry the mount themselves (avatars: `<avatar_url>/avatar/<hash>`): the public URL is
   * the host root and paths already under the mount pass unchanged.
   */
  readonly urlsCarryMount?: boolean;
  /** Label of its public URL at the top of the home page. */
  readonly label: string;
}

/** What a prelaunch gets: the server is not built yet. */
export interface EarlyContext {
  config: Config;
  /** Absolute path of the data directory. */
  dataDir: string;
  logger: Logger;
}

/** Hits and misses of a cache, counted since this process started. */
export interface Lookups {
  hits: number;
  misses: number;
}

/** The sessions of a listener beside the HTTP server (the Syncthing relay) in this process. */
export interface Sessions {
  /** Open now. */
  active: number;
  /** Started since this process started. */
  started: number;
  /** Bytes carried since this process started. */
  bytes: number;
}

/**
 * What a utility shows on the operator's dashboard (services/admin), read at each usage flush and
 * each stats request. The dashboard reads these and nothing else of a utility, so a utility keeps
 * its metric names and config keys to itself. A reader answers null when what it reads is not on
 * this server; for `cache`, `queue` and a set quota that is a fault, which
 * services/admin/dashboards.test.ts catches.
 */
export interface Dashboard {
  /** The hit ratio of its cache. */
  cache?(): Promise<Lookups | null>;
  /** Work waiting for a slot now, and at most how much may wait in one instance. */
  queue?: { readonly limit: number; waiting(): Promise<number | null> };
  /** Its listener's sessions; null while no listener runs in this process. */
  sessions?(): Promise<Sessions | null>;
  /** The optional profiles it serves on this server (the proxy's ecosystems). */
  readonly profiles?: readonly string[];
  /** Bytes stored against its quota (every instance together); null when no quota is set. */
  quota?(): Promise<{ used: number; limit: number } | null>;
}

/**
 * A utility's per-server state (the relay's running listener): `ctx.local(key)` makes it with
 * `key.make()` the first time a server asks, so the utility's plugin, background listener and
 * dashboard share one, and two servers in one process never do.
 */
export interface LocalKey<T> {
  make(): T;
}

export interface ServiceDef<N extends string = string, S extends Section = Section> {
  /** The utility's one name: folder, config section, env prefix, log field `svc`, metric label. */
  readonly name: N;
  /** Its config section; one with `host` also needs the keys `host` and `publicUrl`. */
  readonly config: S;
  /**
   * The name its section had before (plantuml for diagrams): every key is still read under that
   * section and env prefix, below the current name, with a warning naming the new key.
   */
  readonly formerly?: string;
  /** Loads the Fastify plugin (when the server is built: reading the config loads no service code). */
  readonly plugin: () => Promise<{ default: FastifyPluginAsync<ServiceContext> }>;
  readonly host?: HostDef;
  /** Loads its home page section (when the home page is set up, not when the config is read). */
  readonly page?: () => Promise<PageSection>;
  /**
   * Starts slow work of a serving process before the server is built, so it overlaps Node's own
   * start-up (PlantUML's JVMs); the plugin takes it over. Servers built for inject() never run it.
   */
  readonly prelaunch?: (early: EarlyContext) => Promise<unknown>;
  /** Starts a listener that lives beside the HTTP server (one owner process; see main.ts). */
  readonly background?: (ctx: ServiceContext) => Promise<Background>;
  /** Loads its figures on the operator's dashboard (when the dashboard is set up). */
  readonly dashboard?: (ctx: ServiceContext) => Promise<Dashboard>;
}

/** Keeps the literal name and the section's field types (they make up the Config type). */
export function defineService<const D extends ServiceDef>(def: D): D {
  return def;
}

/** The values of a definition's section (for utilities the Config type does not list, e.g. in tests). */
export function sectionOf<S extends Section>(config: Config, def: ServiceDef<string, S>): SectionValue<S> {
  const section = (config as unknown as Record<string, SectionValue<S> | undefined>)[def.name];
  if (!section) throw new Error(`the configuration has no section "${def.name}"`);
  return section;
}

/** A utility is served unless its section says enabled=false. */
export function isEnabled(config: Config, def: ServiceDef): boolean {
  return (sectionOf(config, def) as { enabled?: unknown }).enabled !== false;
}
