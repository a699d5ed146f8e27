// Address-range tables as ip-location-db ships them in CSV (`start,end,value...`, rows sorted by
// start; unsorted files are sorted), held in typed arrays and searched by bisection. Parsed from the
// file's bytes without a string per row (issue 35: the ASN data is half a million rows); parsing
// yields to the event loop every few thousand rows, so a load never stalls other requests.
import { open } from 'node:fs/promises';
import { blank, parseV4, parseV6 } from './range-bytes.ts';
import { Family } from './range-family.ts';
import { ValueStore } from './range-values.ts';

const YIELD_EVERY = 8192;

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

export class RangeTable {
  readonly rows: number;
  readonly skipped: number;
  /** Rows cut short (or dropped) because they overlapped the row before. */
  readonly clipped: number;
  private readonly v4: Family;
  private readonly v6: Family;
  /** Each distinct value part of a row, as written (split on lookup: half the memory). */
  private readonly values: ValueStore;

  private constructor(v4: Family, v6: Family, values: ValueStore, skipped: number, clipped: number) {
    this.v4 = v4;
    this.v6 = v6;
    this.values = values;
    this.rows = v4.size + v6.size;
    this.skipped = skipped;
    this.clipped = clipped;
  }

  /** The value columns of the range holding `ip`, or null. */
  get(ip: string): readonly string[] | null {
    // Latin-1 bytes would turn other characters into digits: an address is ASCII.
    if (ip.length > 64 || !/^[\x21-\x7e]*$/.test(ip)) return null;
    const b = Buffer.from(ip, 'latin1');
    const key = new Uint32Array(4);
    const n4 = parseV4(b, 0, b.length);
    let i = -1;
    if (n4 !== -1) {
      key[0] = n4;
      i = this.v4.find(key);
    } else if (parseV6(b, 0, b.length, key)) i = this.v6.find(key);
    const v = this.values.get(i);
    return v === undefined ? null : splitCsv(v);
  }

  /**
   * Reads a CSV file, `chunkBytes` at a time (never the whole file in memory). Malformed rows are
   * skipped and counted, overlapping rows clipped and counted (Family.disjoint); a file with no
   * usable row is refused.
   */
  static async load(path: string, chunkBytes = 1 << 20): Promise<RangeTable> {
    const rows = new Rows();
    const file = await open(path, 'r');
    try {
      let buf = Buffer.allocUnsafe(chunkBytes);
      let [at, have, eof] = [0, 0, false];
      // A pause before every YIELD_EVERY-th line, as when this read line by line.
      let until = YIELD_EVERY - 1;
      for (;;) {
        at = rows.read(buf, at, have, eof, until);
        if (rows.lines === until) {
          await new Promise((r) => setImmediate(r));
          until += YIELD_EVERY;
        } else if (eof) break;
        else {
          // Keep the unfinished line, in a bigger buffer when it fills this one.
          if (at > 0) buf.copy(buf, 0, at, have);
          [have, at] = [have - at, 0];
          if (have === buf.length) {
            const bigger = Buffer.allocUnsafe(buf.length * 2);
            buf.copy(bigger, 0, 0, have);
            buf = bigger;
          }
          const { bytesRead } = await file.read(buf, have, buf.length - have, null);
          if (bytesRead === 0) eof = true;
          have += bytesRead;
        }
      }
    } finally {
      await file.close();
    }
    const { v4, v6, values, skipped } = rows;
    if (v4.size + v6.size === 0) throw new Error(`${path}: no address ranges found`);
    const clipped = v4.disjoint() + v6.disjoint();
    values.trim();
    return new RangeTable(v4, v6, values, skipped, clipped);
  }
}

/** A file's rows read into their families, a batch of lines at a time (a plain loop: it optimises early). */
class Rows {
  readonly v4 = new Family(1);
  readonly v6 = new Family(4);
  readonly values = new ValueStore();
  skipped = 0;
  /** Lines read so far. */
  lines = 0;
  private readonly start = new Uint32Array(4);
  private readonly end = new Uint32Array(4);

  /**
   * Reads the whole lines in buf[at, end), the unfinished last one too when `last`, stopping at
   * line `until`; returns the offset after what it read.
   */
  read(buf: Buffer, at: number, end: number, last: boolean, until: number): number {
    while (this.lines < until && at < end) {
      // By hand: buf.indexOf costs more per call than scanning a 60-byte line.
      let nl = at;
      while (nl < end && buf[nl] !== 10) nl++;
      if (nl === end && !last) break;
      this.lines++;
      this.row(buf, at, nl > at && buf[nl - 1] === 13 ? nl - 1 : nl);
      at = Math.min(nl + 1, end);
    }
    return at;
  }

  /** One line, buf[from, stop) without its line end. */
  private row(buf: Buffer, from: number, stop: number): void {
    const { start, end } = this;
    // The first two commas; the family is IPv6 when the first column holds a ':'.
    let c1 = from;
    let colon = false;
    for (; c1 < stop && buf[c1] !== 44; c1++) if (buf[c1] === 58) colon = true;
    let c2 = c1 + 1;
    while (c2 < stop && buf[c2] !== 44) c2++;
    if (c1 === from || c2 >= stop) {
      if (!blank(buf, from, stop)) this.skipped++;
      return;
    }
    let fam: Family | undefined;
    if (colon) {
      if (parseV6(buf, from, c1, start) && parseV6(buf, c1 + 1, c2, end)) fam = this.v6;
    } else {
      const a = parseV4(buf, from, c1);
      const b = parseV4(buf, c1 + 1, c2);
      if (a !== -1 && b !== -1) {
        start[0] = a;
        end[0] = b;
        fam = this.v4;
      }
    }
    if (fam?.valid(start, end)) fam.add(start, end, this.values.intern(buf, c2 + 1, stop));
    else this.skipped++;
  }
}
