// A response head the fast lane (fast-lane.ts) writes many times: its fixed header lines are checked
// and rendered once, and each answer adds only its own values (request id, Expires, rate-limit
// counts). res.writeHead(status, array) checks every name and value against the token and
// field-value patterns on every answer and concatenates them anew: for a proxy hit's 12 headers
// about 1.3 us of CPU on Node 26, against 0.2 us this way (ServerResponse included in both).
//
// How: writeHead without headers writes the response's own header table without checking it (it
// was checked as it was filled, by setHeader). The lane hands it a table of two fields: the request
// id, whose value carries the rendered lines that follow it, and Content-Length, on its own so
// that Node still sees the length (keep-alive, HEAD). Node then adds Date and Connection/Keep-Alive
// as for any answer, and the response is left as writeHead(status, array) leaves it (no header
// table). Only lines Node has no opinion on are rendered ahead: a head naming Connection,
// Transfer-Encoding, Date, Expect, Trailer or Keep-Alive, or a value outside printable ASCII, is
// not prepared (null), and the lane writes it with writeHead as before; so does a runtime whose
// ServerResponse keeps its header table under another name. Content-Disposition is prepared: Node
// only re-encodes its value (latin1 bytes read back as UTF-8), which leaves printable ASCII as it
// is; a cached avatar's head names it (measured: its head took 3.4-3.8 % of an avatar hit's CPU
// through writeHead, 0.95 % prepared).
import type { ServerResponse } from 'node:http';
import { nodeHttp } from './node-http.ts';

/**
 * Header names Node acts on when it writes a head (besides Content-Length), and X-Request-Id, which
 * write() puts first itself: never pre-rendered.
 */
const NODE_READS = new Set([
  'connection',
  'transfer-encoding',
  'date',
  'expect',
  'trailer',
  'keep-alive',
  'x-request-id',
]);
/** What a pre-rendered value may hold: printable ASCII and tab (what every header here is). */
const PLAIN = /^[\t\x20-\x7e]*$/;

let tableKey: symbol | null | undefined;

/** The ServerResponse's header table symbol, found once; null on a runtime that has none. */
function tableOf(res: ServerResponse): symbol | null {
  if (tableKey === undefined) {
    const k = Object.getOwnPropertySymbols(res).find((s) => s.description === 'kOutHeaders');
    tableKey = k ?? null;
  }
  return tableKey;
}

type Field = [name: string, value: string];

/**
 * The header table writeHead reads, shaped as Node's own (no prototype chain to walk, entries
 * [name, value] by lower-case name): one object kept per head, its values written per answer.
 */
class Table {
  constructor(id: Field, length: Field | null) {
    const t = this as unknown as Record<string, Field>;
    t['x-request-id'] = id;
    if (length) t['content-length'] = length;
  }
}
Object.setPrototypeOf(Table.prototype, null);

export class RawHead {
  /** The fixed lines, each "\r\nname: value" (no Content-Length). */
  private readonly rest: string;
  /** The fixed Content-Length, when the head has one. */
  readonly length: string | null;
  private readonly id: Field = ['x-request-id', ''];
  private readonly len: Field = ['content-length', ''];
  private readonly withLength = new Table(this.id, this.len);
  private readonly withoutLength = new Table(this.id, null);

  private constructor(rest: string, length: string | null) {
    this.rest = rest;
    this.length = length;
  }

  /**
   * The prepared head of these fixed headers (flat: name, value, ...; lower-case names), or null
   * when it cannot be written this way. Names and values are checked here as writeHead would.
   */
  static of(fixed: readonly string[]): RawHead | null {
    let rest = '';
    let length: string | null = null;
    for (let i = 0; i < fixed.length; i += 2) {
      const name = fixed[i]!;
      const value = fixed[i + 1]!;
      if (NODE_READS.has(name) || name !== name.toLowerCase() || !PLAIN.test(value)) return null;
      try {
        nodeHttp.validateHeaderName(name);
        nodeHttp.validateHeaderValue(name, value);
      } catch {
        return null;
      }
      if (name === 'content-length') {
        if (length !== null || !/^\d+$/.test(value)) return null;
        length = value;
      } else rest += `\r\n${name}: ${value}`;
    }
    return new RawHead(rest, length);
  }

  /**
   * writeHead(status) with X-Request-Id `id` first (a plain token: request-id.ts), then `lines`
   * (this answer's own, rendered "\r\nname: value", numbers and dates only), the fixed lines and
   * Content-Length (`length`, else the fixed one). False, having written nothing, where this
   * cannot be done (another runtime, headers already set on `res`).
   */
  write(res: ServerResponse, status: number, id: string, lines: string, length = this.length): boolean {
    const key = tableOf(res);
    const r = res as unknown as Record<symbol, unknown>;
    // Headers set on this response already (by a wrapper) are merged by writeHead(status, array).
    if (key === null || r[key] !== null) return false;
    this.id[1] = id + lines + this.rest;
    if (length !== null) this.len[1] = length;
    r[key] = length !== null ? this.withLength : this.withoutLength;
    try {
      res.writeHead(status);
    } finally {
      r[key] = null;
    }
    return true;
  }
}
