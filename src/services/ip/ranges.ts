// Address-range tables as ip-location-db ships them in CSV (`start,end,value...`, rows sorted by
// start; unsorted files are sorted), held in typed arrays and searched by bisection. Parsing yields to the event loop every
// few thousand rows, so loading half a million rows never stalls other requests.
import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import { expandV6 } from '../../infra/http/client-ip.ts';

const YIELD_EVERY = 8192;

/**
 * An IPv4 address (dotted quad, no leading zeros) as an unsigned 32-bit number; null when it is not
 * one. By hand rather than isIPv4 + split: it runs for every row of a half-million-row file.
 */
export function ipv4ToNumber(ip: string): number | null {
  let n = 0;
  let octet = -1;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return null; // leading zero
      octet = (octet < 0 ? 0 : octet * 10) + (c - 48);
      if (octet > 255 || ++digits > 3) return null;
    } else if (c === 46 && digits > 0 && dots < 3) {
      n = n * 256 + octet;
      octet = -1;
      digits = 0;
      dots++;
    } else return null;
  }
  return dots === 3 && digits > 0 ? n * 256 + octet : null;
}

/** An IPv6 address as a 128-bit number; null when it is not one. */
export function ipv6ToBigInt(ip: string): bigint | null {
  if (!isIPv6(ip)) return null;
  const g = expandV6(ip.toLowerCase());
  if (!g) return null;
  let n = 0n;
  for (const x of g) n = (n << 16n) | BigInt(x);
  return n;
}

/** Splits one CSV record (RFC 4180 quoting, `""` inside quotes). */
export function splitCsv(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let v = '';
      let j = i + 1;
      for (;;) {
        const q = line.indexOf('"', j);
        if (q === -1) return out.concat(v + line.slice(j)); // unterminated: take the rest
        v += line.slice(j, q);
        if (line[q + 1] === '"') {
          v += '"';
          j = q + 2;
        } else {
          j = q + 1;
          break;
        }
      }
      out.push(v);
      const comma = line.indexOf(',', j);
      if (comma === -1) break;
      i = comma + 1;
    } else {
      const comma = line.indexOf(',', i);
      if (comma === -1) {
        out.push(line.slice(i));
        break;
      }
      out.push(line.slice(i, comma));
      i = comma + 1;
    }
  }
  return out;
}

/** One family's rows while loading: starts and ends in ascending order, each row's value index. */
class Family<N extends number | bigint> {
  starts: N[] = [];
  ends: N[] = [];
  vals: number[] = [];
  private sorted = true;

  add(start: N, end: N, val: number): void {
    const prev = this.starts[this.starts.length - 1];
    if (prev !== undefined && start < prev) this.sorted = false;
    this.starts.push(start);
    this.ends.push(end);
    this.vals.push(val);
  }

  /**
   * Sorts by start when the file was not, then makes the ranges disjoint (bisection needs it): a
   * row overlapping the one before keeps only its part after it (the packaged ASN data has one
   * such row). Returns how many rows were cut short or dropped.
   */
  disjoint(): number {
    let order = this.starts.map((_, i) => i);
    const s = this.starts as N[];
    // Equal starts keep file order (sort is stable), so the first of them wins below.
    if (!this.sorted) order = order.sort((a, b) => (s[a]! < s[b]! ? -1 : s[a]! > s[b]! ? 1 : 0));
    const [starts, ends, vals]: [N[], N[], number[]] = [[], [], []];
    let clipped = 0;
    for (const i of order) {
      let start = this.starts[i] as N;
      const end = this.ends[i] as N;
      const prevEnd = ends[ends.length - 1];
      if (prevEnd !== undefined && start <= prevEnd) {
        clipped++;
        if (end <= prevEnd) continue;
        start = (typeof prevEnd === 'bigint' ? prevEnd + 1n : (prevEnd as number) + 1) as N;
      }
      starts.push(start);
      ends.push(end);
      vals.push(this.vals[i] as number);
    }
    [this.starts, this.ends, this.vals] = [starts, ends, vals];
    return clipped;
  }
}

/** IPv4 rows packed into Uint32Arrays once loaded (they are most of the rows). */
class Family4 {
  private readonly starts: Uint32Array;
  private readonly ends: Uint32Array;
  private readonly vals: Uint32Array;
  constructor(f: Family<number>) {
    this.starts = Uint32Array.from(f.starts);
    this.ends = Uint32Array.from(f.ends);
    this.vals = Uint32Array.from(f.vals);
  }
  find(n: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.starts[mid] as number) <= n) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && n <= (this.ends[hi] as number) ? (this.vals[hi] as number) : -1;
  }
}

/** IPv6 rows as 128-bit numbers packed into 64-bit halves (a bigint array costs three times more). */
class Family6 {
  private readonly starts: BigUint64Array;
  private readonly ends: BigUint64Array;
  private readonly vals: Uint32Array;
  constructor(f: Family<bigint>) {
    const pack = (xs: bigint[]) => {
      const out = new BigUint64Array(xs.length * 2);
      xs.forEach((x, i) => {
        out[2 * i] = x >> 64n;
        out[2 * i + 1] = BigInt.asUintN(64, x);
      });
      return out;
    };
    this.starts = pack(f.starts);
    this.ends = pack(f.ends);
    this.vals = Uint32Array.from(f.vals);
  }
  private at(a: BigUint64Array, i: number): bigint {
    return ((a[2 * i] as bigint) << 64n) | (a[2 * i + 1] as bigint);
  }
  find(n: bigint): number {
    let lo = 0;
    let hi = this.vals.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(this.starts, mid) <= n) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && n <= this.at(this.ends, hi) ? (this.vals[hi] as number) : -1;
  }
}

export class RangeTable {
  readonly rows: number;
  readonly skipped: number;
  /** Rows cut short (or dropped) because they overlapped the row before. */
  readonly clipped: number;
  private readonly v4: Family4;
  private readonly v6: Family6;
  /** Each distinct value part of a row, as written (split on lookup: half the memory). */
  private readonly values: readonly string[];

  private constructor(
    v4: Family<number>,
    v6: Family<bigint>,
    values: string[],
    skipped: number,
    clipped: number,
  ) {
    this.v4 = new Family4(v4);
    this.v6 = new Family6(v6);
    this.values = values;
    this.rows = v4.starts.length + v6.starts.length;
    this.skipped = skipped;
    this.clipped = clipped;
  }

  /** The value columns of the range holding `ip`, or null. */
  get(ip: string): readonly string[] | null {
    const n4 = ipv4ToNumber(ip);
    const n6 = n4 === null ? ipv6ToBigInt(ip) : null;
    const i = n4 !== null ? this.v4.find(n4) : n6 !== null ? this.v6.find(n6) : -1;
    const v = i === -1 ? undefined : this.values[i];
    return v === undefined ? null : splitCsv(v);
  }

  /**
   * Reads a CSV file. Malformed rows are skipped and counted, overlapping rows clipped and counted
   * (Family.disjoint); a file with no usable row is refused.
   */
  static async load(path: string): Promise<RangeTable> {
    const buf = await readFile(path);
    const v4 = new Family<number>();
    const v6 = new Family<bigint>();
    const interned = new Map<string, number>();
    const values: string[] = [];
    const intern = (rest: string): number => {
      let vi = interned.get(rest);
      if (vi === undefined) {
        vi = values.push(rest) - 1;
        interned.set(rest, vi);
      }
      return vi;
    };
    let skipped = 0;
    let line = 0;
    // Adds one row to its family; false when malformed.
    const add = <N extends number | bigint>(fam: Family<N>, start: N | null, end: N | null, rest: string) => {
      if (start === null || end === null || end < start) return false;
      fam.add(start, end, intern(rest));
      return true;
    };
    // From the bytes, not one big string: each kept value is then a string of its own, not a
    // slice that would pin the whole file in memory.
    for (let at = 0; at < buf.length; ) {
      let nl = buf.indexOf(10, at);
      if (nl === -1) nl = buf.length;
      const end = buf[nl - 1] === 13 ? nl - 1 : nl;
      const from = at;
      at = nl + 1;
      line++;
      if (line % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      const c1 = buf.indexOf(44, from);
      const c2 = c1 === -1 ? -1 : buf.indexOf(44, c1 + 1);
      if (c1 <= from || c2 === -1 || c2 >= end) {
        if (buf.toString('latin1', from, end).trim() !== '') skipped++;
        continue;
      }
      const a = buf.toString('latin1', from, c1);
      const b = buf.toString('latin1', c1 + 1, c2);
      const rest = buf.toString('utf8', c2 + 1, end);
      const added = a.includes(':')
        ? add(v6, ipv6ToBigInt(a), ipv6ToBigInt(b), rest)
        : add(v4, ipv4ToNumber(a), ipv4ToNumber(b), rest);
      if (!added) skipped++;
    }
    if (v4.starts.length + v6.starts.length === 0) throw new Error(`${path}: no address ranges found`);
    const clipped = v4.disjoint() + v6.disjoint();
    return new RangeTable(v4, v6, values, skipped, clipped);
  }
}
