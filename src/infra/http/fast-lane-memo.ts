// The fast lane's remembered answers (fast-lane.ts): per URL, the headers Fastify sent for a cache
// hit, captured after every hook ran, with the prepared body they belong to. The body is held
// weakly: the cache that owns it decides how long it lives, never this table.
import type { IncomingHttpHeaders } from 'node:http';
import type { Charge } from '../limits/rate-limit.ts';
import type { Subjects } from '../observe/usage/usage.ts';
import type { PreparedResponse } from './prepared-response.ts';
import { contentRange } from './range.ts';
import type { RawHead } from './raw-head.ts';

/** What a route says about an answer it lets the lane repeat (FastLane.remember). */
export interface RememberOptions {
  /**
   * Checked on every repeat: false drops the answer (its cache let the body go, its source
   * changed). Where a repeat counts as a cache hit, this is where it is counted; `status` is the
   * answer the lane would send (a 304 sends no body: count it as the route counts its own 304).
   */
  valid?: (status: 200 | 304) => boolean;
  /** Epoch ms after which the answer is not repeated (a lookup it rests on expires then). */
  until?: number;
  /** Request headers the answer depends on besides the URL (its own Vary names are added). */
  vary?: readonly string[];
  /**
   * Whether a request may have the answer, from headers the answer depends on in ways `vary` cannot
   * name (a family of headers by prefix); false leaves the request to Fastify.
   */
  accepts?: (headers: IncomingHttpHeaders) => boolean;
  /**
   * Whether this client may have the answer now (`now`: the lane's clock for this answer, epoch
   * ms); false leaves the request to Fastify.
   */
  admit?: (clientIp: string, now: number) => boolean;
  /**
   * Told of every repeat: its status, the client, the body bytes sent (counters, budgets) and the
   * lane's clock for this answer (epoch ms, the one admit() was given).
   */
  onHit?: (status: number, clientIp: string, bytes: number, now: number) => void;
}

export interface Entry {
  readonly svc: string;
  /** The Fastify route's URL template: the metric and trace label. */
  readonly route: string;
  readonly ref: WeakRef<PreparedResponse>;
  /** Headers of the 200, flat (name, value, ...), without the ones made per request. */
  readonly head: readonly string[];
  /** Headers of a 304 (the 200's without those the prepared answer leaves out of a 304). */
  readonly notModified: readonly string[];
  /** Seconds from now that Expires names, when the answer has one. */
  readonly expiresIn: number | null;
  readonly charge: Charge | null;
  readonly subjects: Subjects | null;
  readonly vary: readonly string[];
  readonly varyValues: readonly (string | undefined)[];
  readonly o: RememberOptions;
  /** Whether the answer takes byte ranges (it said Accept-Ranges: bytes): the lane then sends 206s. */
  readonly ranges: boolean;
  /** Another variant of the same URL (other values of the Vary headers). */
  next: Entry | null;
  /** The 200's and the 304's whole header arrays, reused by the lane for answers without per-client headers. */
  sent200?: string[];
  sent304?: string[];
  /** The 200's and the 304's prepared heads (raw-head.ts; null: written with writeHead), made on first use. */
  raw200?: RawHead | null;
  raw304?: RawHead | null;
}

/** Made anew for every answer: never repeated. */
export const PER_REQUEST = new Set([
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'ratelimit-policy',
  'expires',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
]);

/** Variants kept per URL: bounds what a header with many values can hold. */
const VARIANTS = 4;

export interface Captured {
  svc: string;
  route: string;
  prepared: PreparedResponse;
  /** The headers as Fastify sent them (reply.getHeaders()). */
  sent: Record<string, string | number | string[] | undefined>;
  request: IncomingHttpHeaders;
  charge: Charge | null;
  subjects: Subjects | null;
  o: RememberOptions;
  now: number;
}

/** The entry for an answer Fastify sent, or null when it cannot be repeated as it was. */
export function entryOf(c: Captured): Entry | null {
  const sent = c.sent;
  if (sent['set-cookie'] !== undefined) return null;
  if (Number(sent['content-length']) !== c.prepared.body.length) return null;
  const vary = new Set((c.o.vary ?? []).map((n) => n.toLowerCase()));
  for (const n of String(sent['vary'] ?? '').split(',')) {
    const name = n.trim().toLowerCase();
    if (name === '*') return null;
    if (name) vary.add(name);
  }
  const omit304 = new Set(
    Object.keys(c.prepared.headers).filter((k) => !(k in c.prepared.notModifiedHeaders)),
  );
  const head: string[] = [];
  const notModified: string[] = [];
  for (const [name, value] of Object.entries(sent)) {
    if (value === undefined || PER_REQUEST.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      head.push(name, String(v));
      if (!omit304.has(name)) notModified.push(name, String(v));
    }
  }
  const exp = typeof sent['expires'] === 'string' ? Date.parse(sent['expires']) : Number.NaN;
  const names = [...vary];
  return {
    svc: c.svc,
    route: c.route,
    ref: new WeakRef(c.prepared),
    head,
    notModified,
    expiresIn: Number.isNaN(exp) ? null : Math.max(0, Math.round((exp - c.now) / 1000)),
    charge: c.charge,
    subjects: c.subjects,
    vary: names,
    varyValues: names.map((n) => headerText(c.request[n])),
    o: c.o,
    ranges: sent['accept-ranges'] === 'bytes',
    next: null,
  };
}

/** The 200's headers for a 206 of bytes start..end of `size`: its length and Content-Range. */
export function partialHead(head: readonly string[], start: number, end: number, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < head.length; i += 2)
    out.push(head[i]!, head[i] === 'content-length' ? String(end - start + 1) : head[i + 1]!);
  out.push('content-range', contentRange({ start, end }, size));
  return out;
}

function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

function matches(e: Entry, h: IncomingHttpHeaders): boolean {
  for (let i = 0; i < e.vary.length; i++) if (headerText(h[e.vary[i]!]) !== e.varyValues[i]) return false;
  return true;
}

/** Remembered answers by URL, at most `capacity` URLs (the oldest remembered go first). */
export class MemoTable {
  private readonly map = new Map<string, Entry>();
  private readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.map.size;
  }

  /** The variant of `url` these request headers select. */
  find(url: string, h: IncomingHttpHeaders): Entry | undefined {
    for (let e: Entry | null = this.map.get(url) ?? null; e; e = e.next)
      if (e.vary.length === 0 || matches(e, h)) return e;
    return undefined;
  }

  set(url: string, entry: Entry): void {
    const old = this.map.get(url);
    this.map.delete(url);
    // Other variants stay (up to VARIANTS); the one this entry replaces goes.
    let kept = 0;
    let tail: Entry = entry;
    for (let e = old ?? null; e && kept < VARIANTS - 1; e = e.next) {
      if (sameVariant(e, entry)) continue;
      tail.next = { ...e, next: null };
      tail = tail.next;
      kept++;
    }
    this.map.set(url, entry);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }

  /** Drops one variant of `url` (its answer is no longer valid). */
  drop(url: string, entry: Entry): void {
    const first = this.map.get(url);
    if (!first) return;
    if (first === entry) {
      if (entry.next === null) this.map.delete(url);
      else this.map.set(url, entry.next);
      return;
    }
    for (let e = first; e.next; e = e.next)
      if (e.next === entry) {
        e.next = entry.next;
        return;
      }
  }

  clear(): void {
    this.map.clear();
  }
}

function sameVariant(a: Entry, b: Entry): boolean {
  if (a.vary.length !== b.vary.length) return false;
  return a.vary.every((n, i) => n === b.vary[i] && a.varyValues[i] === b.varyValues[i]);
}
