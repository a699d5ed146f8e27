// Joining relay pools (docs/protocols/syncthing-relay.md §12), as strelaysrv does: POST {"url":
// "<relay URL>"} to each pool's endpoint over HTTPS, presenting the relay's own certificate as the
// TLS client certificate, then again before the pool's eviction time. With the certificate the pool
// takes the advertised address as it is even when the request comes from another one (NAT, a load
// balancer, a DNS alias), instead of refusing it; the relay URL therefore carries the address
// devices should dial, resolved here when it is a name. Off unless DEVUTIL_RELAY_POOLS names a pool.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { readCapped } from '../../infra/egress/capped-body.ts';
import type { Egress } from '../../infra/egress/client.ts';
import { isLoopback } from '../../infra/egress/netguard.ts';

/** Go's time.Duration text (1m0s, 2m0s, 1.5s, 500ms): strelaysrv writes its URL's timings so. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return h ? `${h}h${m}m${s}s` : m ? `${m}m${s}s` : `${s}s`;
}

export interface PoolUrlInput {
  /** Host for the URL: an address, or '' to let the pool use the address the request came from. */
  host: string;
  port: number;
  deviceId: string;
  pingIntervalMs: number;
  networkTimeoutMs: number;
  /** The status port, 0 = off. */
  statusPort: number;
  providedBy: string;
}

/** The relay URL strelaysrv posts: its query keys sorted (Go's url.Values.Encode). */
export function poolRelayUrl(p: PoolUrlInput): string {
  const q: [string, string][] = [
    ['id', p.deviceId],
    ['networkTimeout', goDuration(p.networkTimeoutMs)],
    ['pingInterval', goDuration(p.pingIntervalMs)],
  ];
  if (p.providedBy) q.push(['providedBy', p.providedBy]);
  if (p.statusPort) q.push(['statusAddr', `:${p.statusPort}`]);
  q.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const host = isIP(p.host) === 6 ? `[${p.host}]` : p.host;
  return `relay://${host}:${p.port}/?${new URLSearchParams(q).toString()}`;
}

export type AddressLookup = (host: string) => Promise<{ address: string; family: number }[]>;

const reachable = (a: string) => !isLoopback(a) && a !== '0.0.0.0' && a !== '::';

/**
 * The host the pool should publish: an advertised address as it is; a name resolved here (a pool
 * replaces a name with the address the request came from, wrong behind NAT or a balancer), an
 * IPv4 address first as more devices reach it. '' when nothing usable is known (loopback, a name
 * that does not resolve): the pool then uses the request's own address, as for strelaysrv's default.
 */
export async function poolHost(advertised: string, lookup: AddressLookup = defaultLookup): Promise<string> {
  const h = advertised.replace(/^\[|\]$/g, '');
  if (isIP(h)) return reachable(h) ? h : '';
  try {
    const addrs = (await lookup(h)).filter((a) => reachable(a.address));
    return (addrs.find((a) => a.family === 4) ?? addrs[0])?.address ?? '';
  } catch {
    return '';
  }
}

const defaultLookup: AddressLookup = (host) => dnsLookup(host, { all: true });

export type PoolState = 'joining' | 'joined' | 'retrying' | 'stopped';

export interface PoolStatus {
  pool: string;
  state: PoolState;
  /** The relay URL last posted. */
  url: string | null;
  joinedAt: string | null;
  /** When the next POST is due (ISO 8601); null once stopped. */
  nextAt: string | null;
  lastError: string | null;
}

export interface PoolOptions {
  pools: readonly string[];
  /** The relay URL to post, worked out before each POST (the advertised name may move). */
  relayUrl: () => Promise<string>;
  /** Presents the relay's certificate; the pool's host may be mapped by egress.resolve. */
  http: Egress;
  logger: Logger;
  /** After a failure (strelaysrv: one minute). */
  retryMs?: number;
  /** When a pool's answer gives no usable eviction time (strelaysrv: one hour). */
  fallbackMs?: number;
  /** Never sooner than this, whatever the pool says: a pool answering 0 must not get a POST loop. */
  minRejoinMs?: number;
  timeoutMs?: number;
}

/** Answers bigger than this are no pool's: the body is a small JSON object or an error line. */
const MAX_ANSWER = 64 * 1024;

export class PoolMembership {
  private readonly o: Required<PoolOptions>;
  private readonly states = new Map<string, PoolStatus>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly closing = new AbortController();

  constructor(o: PoolOptions) {
    this.o = { retryMs: 60_000, fallbackMs: 3_600_000, minRejoinMs: 10_000, timeoutMs: 30_000, ...o };
    for (const pool of o.pools)
      this.states.set(pool, {
        pool,
        state: 'joining',
        url: null,
        joinedAt: null,
        nextAt: null,
        lastError: null,
      });
  }

  start(): void {
    for (const pool of this.o.pools) void this.join(pool);
  }

  status(): PoolStatus[] {
    return [...this.states.values()].map((s) => ({ ...s }));
  }

  close(): void {
    this.closing.abort();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private later(pool: string, ms: number): void {
    const s = this.states.get(pool);
    if (this.closing.signal.aborted || !s) return;
    s.nextAt = new Date(Date.now() + ms).toISOString();
    const t = setTimeout(() => {
      this.timers.delete(t);
      void this.join(pool);
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  /** One POST; schedules the next one as strelaysrv does for each answer. */
  private async join(pool: string): Promise<void> {
    const s = this.states.get(pool);
    if (!s || this.closing.signal.aborted) return;
    const log = this.o.logger;
    let status: number;
    let body: string;
    try {
      s.url = await this.o.relayUrl();
      const target = new URL(pool);
      const res = await this.o.http.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: s.url }),
        signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.o.timeoutMs)]),
      });
      status = res.statusCode;
      body = (await readCapped(res.body, MAX_ANSWER)).toString('utf8');
    } catch (err) {
      if (this.closing.signal.aborted) return;
      s.state = 'retrying';
      s.lastError = err instanceof Error ? err.message : String(err);
      log.warn({ pool, err: s.lastError }, 'relay pool could not be reached');
      return this.later(pool, this.o.retryMs);
    }
    const said = body.trim().split('\n')[0]?.slice(0, 200) ?? '';
    if (status === 200) {
      s.state = 'joined';
      s.joinedAt = new Date().toISOString();
      s.lastError = null;
      const ns = evictionNs(body);
      // Rejoin at four fifths of the eviction time, as strelaysrv does.
      const ms = ns === null ? this.o.fallbackMs : Math.max(this.o.minRejoinMs, Math.floor((ns / 1e6) * 0.8));
      log.info({ pool, url: s.url, rejoinInSec: Math.round(ms / 1000) }, 'relay joined pool');
      return this.later(pool, ms);
    }
    s.lastError = `${status}${said ? ` ${said}` : ''}`;
    if (status === 401) {
      // The pool will not take this relay from this address (or has blocked it): strelaysrv gives up.
      s.state = 'stopped';
      s.nextAt = null;
      log.error({ pool, status, said }, 'relay pool refused the relay; not trying again');
      return;
    }
    s.state = 'retrying';
    log.warn({ pool, status, said }, 'relay pool did not take the relay; trying again');
    this.later(pool, this.o.retryMs);
  }
}

/** `{"evictionIn": <nanoseconds>}` (a Go time.Duration in JSON), or null. */
function evictionNs(body: string): number | null {
  try {
    const v = (JSON.parse(body) as { evictionIn?: unknown } | null)?.evictionIn;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null;
  } catch {
    return null;
  }
}
