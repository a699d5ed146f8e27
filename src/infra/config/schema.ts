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
  /**
   * The `section.key` this key replaced (e.g. "files.backend"): its env name, file key and flag are
   * still read, with a deprecation warning naming the new ones.
   */
  readonly formerly?: string;
  /**
   * Variables other programs share (HTTPS_PROXY, NO_PROXY), read when no source sets the key: the
   * DEVUTIL_ name, flags and the config file all win over them. An empty one counts as unset.
   */
  readonly fallbackEnv?: readonly string[];
  /** How the docs state a default computed on this machine ("one per core"), so they read the same everywhere. */
  readonly shownDefault?: string;
  /** Parses a string (env, flag) or a JSON/YAML value (config file). */
  parse(raw: unknown): Parsed<T>;
  /**
   * The value as `devutil config` prints it, in a form parse() takes back unchanged (sizes "1GiB",
   * durations "30s", rates "30/min"); plain values print as they are when absent.
   */
  format?(value: T): unknown;
}

type Opts = {
  doc: string;
  env?: string;
  secret?: boolean;
  formerly?: string;
  fallbackEnv?: readonly string[];
  shownDefault?: string;
};

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
      let n: number;
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) n = raw;
      else {
        const m = typeof raw === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw) : null;
        const u = m?.[2]?.toLowerCase() ?? '';
        const unit = m && Object.hasOwn(SIZE_UNITS, u) ? SIZE_UNITS[u] : undefined;
        if (!m || unit === undefined) return bad(`expected a size like 1048576 or 512MiB, got ${show(raw)}`);
        n = Math.floor(Number(m[1]) * unit);
      }
      if (!Number.isSafeInteger(n) || n < 0) return bad(`size out of range: ${show(raw)}`);
      if (n < (o.min ?? 0)) return bad(`size ${show(raw)} is below the minimum of ${humanBytes(o.min ?? 0)}`);
      return ok(n);
    },
    format: formatBytes,
  };
}

const BINARY: [string, number][] = [
  ['TiB', 1024 ** 4],
  ['GiB', 1024 ** 3],
  ['MiB', 1024 ** 2],
  ['KiB', 1024],
];

/** `1073741824` -> "1GiB"; a count that is no whole number of KiB stays a number. */
export function formatBytes(n: number): string | number {
  const unit = BINARY.find(([, size]) => n >= size && n % size === 0);
  return unit ? `${n / unit[1]}${unit[0]}` : n;
}

/**
 * A byte count for people, in messages and logs: 16777216 -> "16 MiB", 1536 -> "1.5 KiB",
 * 10000 -> "9.77 KiB (10000 bytes)" (the exact count is kept when the unit rounds), 1 -> "1 byte".
 * formatBytes above is for values written back into config (it must parse again).
 */
export function humanBytes(n: number): string {
  const unit = BINARY.find(([, size]) => Math.abs(n) >= size);
  if (!unit) return `${n} ${Math.abs(n) === 1 ? 'byte' : 'bytes'}`;
  const v = n / unit[1];
  const shown = Number(v.toFixed(2));
  return shown * unit[1] === n ? `${shown} ${unit[0]}` : `${shown} ${unit[0]} (${n} bytes)`;
}

type TimeUnit = 'ms' | 's';
const DURATION_UNITS: [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
];
const UNIT_MS: Record<string, number> = Object.fromEntries(DURATION_UNITS);
const UNIT_NAME: Record<TimeUnit, string> = { ms: 'milliseconds', s: 'seconds' };

/** Milliseconds in "30s", "5m", "1500ms", "2h", "7d", "1.5h" or Go-style "1m30s"; null if none. */
export function parseDurationMs(text: string): number | null {
  const s = text.trim().toLowerCase();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(s)) return null;
  let ms = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? 0);
  // Decimal fractions are not exact in binary ("1.1s"): keep microsecond precision.
  return Math.round(ms * 1000) / 1000;
}

/** `90_000` -> "90s", `3_600_000` -> "1h": the largest unit that divides it exactly; 0 stays 0. */
export function formatDurationMs(ms: number): string | number {
  if (ms === 0) return 0;
  const unit = DURATION_UNITS.find(([, size]) => ms % size === 0);
  return unit ? `${ms / unit[1]}${unit[0]}` : `${ms}ms`;
}

/**
 * The one time type. The value is a whole number of `unit` (milliseconds for keys ending in Ms,
 * seconds for keys ending in Sec, so the code and the env names keep their meaning); it accepts
 * "30s", "5m", "1500ms", "2h", "7d" or a plain number of `plain` (default: `unit`).
 */
export function duration(
  def: number,
  o: Opts & { unit: TimeUnit; plain?: TimeUnit; min?: number; max?: number },
): Field<number> {
  const per = UNIT_MS[o.unit] ?? 1;
  const plainPer = UNIT_MS[o.plain ?? o.unit] ?? 1;
  const min = o.min ?? 0;
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  const span = (v: number) => String(formatDurationMs(v * per));
  return {
    kind: 'duration',
    default: def,
    ...o,
    parse(raw) {
      let ms: number | null = null;
      if (typeof raw === 'number') ms = Number.isFinite(raw) ? raw * plainPer : null;
      else if (typeof raw === 'string')
        ms = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) * plainPer : parseDurationMs(raw);
      if (ms === null || ms < 0)
        return bad(
          `expected a duration like 30s, 5m, 1500ms or 2h (a plain number is ${UNIT_NAME[o.plain ?? o.unit]}), got ${show(raw)}`,
        );
      const v = Math.round(ms * 1000) / 1000 / per;
      if (!Number.isSafeInteger(v))
        return bad(`expected a whole number of ${UNIT_NAME[o.unit]}, got ${show(raw)}`);
      if (v < min || v > max)
        return bad(
          `must be between ${span(min)} and ${max === Number.MAX_SAFE_INTEGER ? 'unlimited' : span(max)}, got ${show(raw)}`,
        );
      return ok(v);
    },
    format: (v) => formatDurationMs(v * per),
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
      const unit = m && Object.hasOwn(WINDOWS, m[3]!) ? WINDOWS[m[3]!] : undefined;
      if (!m || unit === undefined) return bad(`expected a rate like 30/min, 5/10s or off, got ${show(raw)}`);
      const windowMs = (m[2] ? Number(m[2]) : 1) * unit;
      if (windowMs <= 0) return bad(`window must be positive: ${show(raw)}`);
      // Any window of a zero budget means unlimited: one value, so it prints back as "off".
      if (Number(m[1]) === 0) return ok({ limit: 0, windowMs: 60_000 });
      return ok({ limit: Number(m[1]), windowMs });
    },
    format: formatRate,
  };
  const d = f.parse(def);
  if (!d.ok) throw new Error(`bad default rate ${def}`);
  return { ...f, default: d.value };
}

const RATE_WINDOWS: [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['min', 60_000],
  ['s', 1000],
];

/** `{limit: 30, windowMs: 60000}` -> "30/min", `{5, 5000}` -> "5/5s": the form rate() parses. */
export function formatRate(r: Rate): string {
  if (r.limit === 0) return 'off';
  const unit = RATE_WINDOWS.find(([, ms]) => r.windowMs % ms === 0) ?? ['s', 1000];
  const n = r.windowMs / unit[1];
  return `${r.limit}/${n === 1 ? '' : n}${unit[0]}`;
}

export type BudgetUnit = 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month';

/** A byte budget per fixed window (infra/limits/byte-budget.ts aligns windows to UTC boundaries). */
export interface Budget {
  /** Bytes allowed per window; 0 = no budget. */
  readonly bytes: number;
  /** The window is `count` x `unit`, e.g. 12 hours. */
  readonly count: number;
  readonly unit: BudgetUnit;
  /** The value as written (`20GiB/day`, `off`), for docs and messages. */
  readonly text: string;
}

// Bare "m" is left out on purpose: minute and month are both plausible.
const BUDGET_UNITS: Record<string, BudgetUnit> = {
  s: 'second',
  sec: 'second',
  second: 'second',
  min: 'minute',
  minute: 'minute',
  h: 'hour',
  hour: 'hour',
  d: 'day',
  day: 'day',
  w: 'week',
  week: 'week',
  mo: 'month',
  month: 'month',
};

const OFF = ['', '0', 'off', 'none', 'unlimited'];

/** A byte budget such as `20GiB/day`, `3TiB/month`, `500MiB/12h`; empty, `0` or `off` = none. */
export function budget(def: string, o: Opts): Field<Budget> {
  const f: Field<Budget> = {
    kind: 'byte budget',
    default: { bytes: 0, count: 1, unit: 'day', text: 'off' },
    ...o,
    format: (b) => b.text,
    parse(raw) {
      if (raw === 0) raw = 'off';
      if (typeof raw !== 'string') return bad(`expected a budget like 20GiB/day or off, got ${show(raw)}`);
      const s = raw.trim().toLowerCase();
      if (OFF.includes(s)) return ok({ bytes: 0, count: 1, unit: 'day', text: 'off' });
      const m = /^(.+?)\s*\/\s*(\d*)\s*([a-z]+?)s?$/.exec(s);
      const unit = m ? BUDGET_UNITS[m[3]!] : undefined;
      if (!m || unit === undefined)
        return bad(`expected a budget like 20GiB/day, 3TiB/month or 500MiB/12h, got ${show(raw)}`);
      const size = bytes(0, { doc: '', min: 1 }).parse(m[1]);
      if (!size.ok) return bad(`${size.error} (in budget ${show(raw)})`);
      const count = m[2] ? Number(m[2]) : 1;
      if (count < 1 || count > 1000) return bad(`window count must be 1-1000: ${show(raw)}`);
      return ok({ bytes: size.value, count, unit, text: raw.trim() });
    },
  };
  const d = f.parse(def);
  if (!d.ok) throw new Error(`bad default budget ${def}`);
  return { ...f, default: d.value };
}

/** A budget for people: `500 KiB per day`, `3 TiB per month`, `500 MiB per 12 hours`. */
export function budgetText(b: Budget): string {
  if (b.bytes <= 0) return 'off';
  return `${humanBytes(b.bytes)} per ${b.count > 1 ? `${b.count} ${b.unit}s` : b.unit}`;
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
