// Country and network (ASN, organisation) of a caller, offline, from databases that ship as npm
// packages (ip-location-db), so `npm update` refreshes them. Opened once, on the first request that
// needs them (a plain /rest/api/v1/ip never pays for them, nor loads mmdb-lib), and shared by every
// request after.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import type { Response } from 'mmdb-lib';
import type { Logger } from 'pino';
import { RangeTable } from './ranges.ts';
import { type Scope, scopeOf } from './scope.ts';

export interface Details {
  scope: Scope;
  /** ISO 3166-1 alpha-2, upper case. */
  country: string | null;
  /** "AS15169". */
  asn: string | null;
  org: string | null;
}

/** The packaged databases used when config names none. */
const PACKAGED = {
  country: ['@ip-location-db/geo-whois-asn-country-mmdb', ['geo-whois-asn-country.mmdb']],
  asn: ['@ip-location-db/asn', ['asn-ipv4.csv', 'asn-ipv6.csv']],
} as const;

type Kind = keyof typeof PACKAGED;
/** The value columns for an address, as in the CSV layout: country [code]; asn [number, org]. */
type Lookup = (ip: string) => readonly (string | undefined)[] | null;

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
const field = (o: unknown, k: string): unknown =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;

/** MMDB records as columns: ip-location-db's `country_code` or MaxMind's `country.iso_code`. */
const MMDB_COLUMNS: Record<Kind, (r: unknown) => (string | undefined)[]> = {
  country: (r) => [str(field(r, 'country_code')) ?? str(field(field(r, 'country'), 'iso_code'))],
  asn: (r) => [str(field(r, 'autonomous_system_number')), str(field(r, 'autonomous_system_organization'))],
};

function packaged(kind: Kind): string[] {
  const [pkg, files] = PACKAGED[kind];
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
  } catch (err) {
    // An optional dependency (README "Lean install"): absent, ?details=1 needs configured databases.
    throw new Error(
      `${pkg} is not installed (an optional dependency): set DEVUTIL_IP_${kind.toUpperCase()}_DB`,
      {
        cause: err,
      },
    );
  }
  return files.map((f) => join(dir, f));
}

type Opened = { lookup: Lookup; rows?: number; skipped?: number; clipped?: number };

async function open(kind: Kind, path: string): Promise<Opened> {
  if (extname(path).toLowerCase() === '.mmdb') {
    const { Reader } = await import('mmdb-lib');
    const reader = new Reader<Response>(await readFile(path));
    const columns = MMDB_COLUMNS[kind];
    return {
      lookup: (ip) => {
        const r = reader.get(ip);
        return r ? columns(r) : null;
      },
    };
  }
  const table = await RangeTable.load(path);
  const { rows, skipped, clipped } = table;
  return { lookup: (ip) => table.get(ip), rows, skipped, clipped };
}

export interface GeoOptions {
  /** Database files per kind (.mmdb or ip-range CSV); empty = the packaged ones. */
  countryDb: readonly string[];
  asnDb: readonly string[];
  /** After a failed load, requests fail fast for this long before the next attempt. */
  retryMs: number;
  logger: Logger;
}

export class IpGeo {
  private loading: Promise<Record<Kind, Lookup>> | undefined;
  private failedAt = 0;
  private readonly o: GeoOptions;
  constructor(o: GeoOptions) {
    this.o = o;
  }

  /** Scope always; country and network for public addresses. Rejects when the data cannot load. */
  async lookup(ip: string): Promise<Details> {
    const scope = scopeOf(ip);
    if (scope !== 'public') return { scope, country: null, asn: null, org: null };
    const db = await this.tables();
    const [cc] = db.country(ip) ?? [];
    const [num, org] = db.asn(ip) ?? [];
    return {
      scope,
      country: cc && /^[A-Za-z]{2}$/.test(cc) ? cc.toUpperCase() : null,
      asn: num && /^\d{1,10}$/.test(num) && num !== '0' ? `AS${num}` : null,
      org: org || null,
    };
  }

  private tables(): Promise<Record<Kind, Lookup>> {
    if (this.loading && this.failedAt && Date.now() - this.failedAt >= this.o.retryMs) {
      this.loading = undefined;
      this.failedAt = 0;
    }
    this.loading ??= this.load().catch((err: unknown) => {
      this.failedAt = Date.now();
      this.o.logger.error({ err }, 'ip database could not be loaded');
      throw err;
    });
    return this.loading;
  }

  private async load(): Promise<Record<Kind, Lookup>> {
    const started = Date.now();
    const kinds = { country: this.o.countryDb, asn: this.o.asnDb };
    const out = {} as Record<Kind, Lookup>;
    for (const kind of ['country', 'asn'] as const) {
      const paths = kinds[kind].length ? [...kinds[kind]] : packaged(kind);
      const dbs: Lookup[] = [];
      for (const path of paths) {
        const { lookup, ...counts } = await open(kind, path);
        this.o.logger.info({ kind, file: basename(path), ...counts }, 'ip database opened');
        dbs.push(lookup);
      }
      // Several files (the IPv4 and IPv6 halves): the first that knows the address answers.
      out[kind] = (ip) => {
        for (const lookup of dbs) {
          const hit = lookup(ip);
          if (hit) return hit;
        }
        return null;
      };
    }
    this.o.logger.info({ ms: Date.now() - started }, 'ip databases ready');
    return out;
  }
}
