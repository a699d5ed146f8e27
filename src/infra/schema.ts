// Declarative config fields: one definition gives the type, the default, the env name, the
// parser, the docs line and whether `devutil config` masks the value.

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export interface Field<T> {
  readonly kind: string;
  readonly default: T;
  readonly doc: string;
  /** Overrides the derived DEVUTIL_<SECTION>_<KEY> name (only for names fixed by issues). */
  readonly env?: string;
  readonly secret?: boolean;
  /** Parses a string (env, flag) or a JSON/YAML value (config file). */
  parse(raw: unknown): Parsed<T>;
}

type Opts = { doc: string; env?: string; secret?: boolean };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const bad = <T>(error: string): Parsed<T> => ({ ok: false, error });

export function int(def: number, o: Opts & { min?: number; max?: number }): Field<number> {
  const min = o.min ?? Number.MIN_SAFE_INTEGER;
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  return {
    kind: 'int',
    default: def,
    ...o,
    parse(raw) {
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && /^-?\d+$/.test(raw.trim())
            ? Number(raw)
            : NaN;
      if (!Number.isSafeInteger(n)) return bad(`expected an integer, got ${show(raw)}`);
      if (n < min || n > max) return bad(`must be between ${min} and ${max}, got ${n}`);
      return ok(n);
    },
  };
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/** A byte count: `1048576`, `512MiB`, `2G` (binary units). */
export function bytes(def: number, o: Opts & { min?: number }): Field<number> {
  return {
    kind: 'bytes',
    default: def,
    ...o,
    parse(raw) {
      if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= (o.min ?? 0)) return ok(raw);
      const m = typeof raw === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw) : null;
      const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
      if (!m || unit === undefined) return bad(`expected a size like 1048576 or 512MiB, got ${show(raw)}`);
      const n = Math.floor(Number(m[1]) * unit);
      if (!Number.isSafeInteger(n) || n < (o.min ?? 0)) return bad(`size out of range: ${show(raw)}`);
      return ok(n);
    },
  };
}

export function bool(def: boolean, o: Opts): Field<boolean> {
  return {
    kind: 'bool',
    default: def,
    ...o,
    parse(raw) {
      if (typeof raw === 'boolean') return ok(raw);
      const s = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
      if (['1', 'true', 'yes', 'on'].includes(s)) return ok(true);
      if (['0', 'false', 'no', 'off'].includes(s)) return ok(false);
      return bad(`expected true or false, got ${show(raw)}`);
    },
  };
}

export function str(def: string, o: Opts & { pattern?: RegExp; hint?: string }): Field<string> {
  return {
    kind: 'string',
    default: def,
    ...o,
    parse(raw) {
      if (typeof raw !== 'string' && typeof raw !== 'number')
        return bad(`expected a string, got ${show(raw)}`);
      const s = String(raw);
      if (o.pattern && s !== '' && !o.pattern.test(s))
        return bad(`expected ${o.hint ?? o.pattern.source}, got ${show(s)}`);
      return ok(s);
    },
  };
}

export function oneOf<const T extends string>(def: T, values: readonly T[], o: Opts): Field<T> {
  return {
    kind: `one of ${values.join('|')}`,
    default: def,
    ...o,
    parse(raw) {
      const s = typeof raw === 'string' ? raw.trim() : raw;
      return values.includes(s as T)
        ? ok(s as T)
        : bad(`expected one of ${values.join(', ')}, got ${show(raw)}`);
    },
  };
}

/** A comma-separated list (or an array in the config file), each item checked by `item`. */
export function list(def: string[], o: Opts & { item?: (s: string) => string | null }): Field<string[]> {
  return {
    kind: 'list',
    default: def,
    ...o,
    parse(raw) {
      const items = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(',') : null;
      if (!items) return bad(`expected a comma-separated list, got ${show(raw)}`);
      const out = items.map((s) => s.trim()).filter((s) => s !== '');
      for (const it of out) {
        const err = o.item?.(it);
        if (err) return bad(`${show(it)}: ${err}`);
      }
      return ok(out);
    },
  };
}

/** An absolute http(s) URL, or '' when `optional`. Stored without a trailing slash. */
export function url(def: string, o: Opts & { optional?: boolean }): Field<string> {
  return {
    kind: 'url',
    default: def,
    ...o,
    parse(raw) {
      if (typeof raw !== 'string') return bad(`expected a URL, got ${show(raw)}`);
      const s = raw.trim();
      if (s === '' && o.optional) return ok('');
      try {
        const u = new URL(s);
        if (u.protocol !== 'http:' && u.protocol !== 'https:')
          return bad(`expected an http(s) URL, got ${show(s)}`);
        return ok(s.replace(/\/+$/, ''));
      } catch {
        return bad(`expected an absolute URL such as https://example.com, got ${show(s)}`);
      }
    },
  };
}

export interface Rate {
  /** Requests allowed per window; 0 = unlimited. */
  readonly limit: number;
  readonly windowMs: number;
}

const WINDOWS: Record<string, number> = {
  s: 1000,
  sec: 1000,
  second: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
};

/** A request budget such as `30/min`, `5/10s`, `1000/h`; `0` or `off` means unlimited. */
export function rate(def: string, o: Opts): Field<Rate> {
  const f: Field<Rate> = {
    kind: 'rate',
    default: { limit: 0, windowMs: 60_000 },
    ...o,
    parse(raw) {
      const s = String(raw).trim().toLowerCase();
      if (s === '0' || s === 'off' || s === 'none' || s === 'unlimited')
        return ok({ limit: 0, windowMs: 60_000 });
      const m = /^(\d+)\s*\/\s*(\d*)\s*([a-z]+)$/.exec(s);
      const unit = m ? WINDOWS[m[3]!] : undefined;
      if (!m || unit === undefined) return bad(`expected a rate like 30/min, 5/10s or off, got ${show(raw)}`);
      const windowMs = (m[2] ? Number(m[2]) : 1) * unit;
      if (windowMs <= 0) return bad(`window must be positive: ${show(raw)}`);
      return ok({ limit: Number(m[1]), windowMs });
    },
  };
  const d = f.parse(def);
  if (!d.ok) throw new Error(`bad default rate ${def}`);
  return { ...f, default: d.value };
}

export function formatRate(r: Rate): string {
  if (r.limit === 0) return 'off';
  const unit = Object.entries(WINDOWS).find(([, ms]) => r.windowMs % ms === 0 && r.windowMs / ms === 1);
  return unit ? `${r.limit}/${unit[0]}` : `${r.limit}/${r.windowMs / 1000}s`;
}

function show(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

export type Section = Record<string, Field<unknown>>;
export type SectionValue<S> = { readonly [K in keyof S]: S[K] extends Field<infer T> ? T : never };

export function defineSection<S extends Section>(fields: S): S {
  return fields;
}
