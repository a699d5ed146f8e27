// Connection budget: one per process, shared by the HTTP server and the relay listener. A total cap
// below the open-files limit and a per-client share (IPv6 per /64), checked at accept, so a socket
// over budget is closed before any TLS handshake or HTTP parsing is spent on it.
import { readFileSync } from 'node:fs';
import { type BlockList, isIPv4, type Server, type Socket } from 'node:net';
import { Counter, Gauge } from 'prom-client';
import { addressGroup, canonicalIp } from '../http/client-ip.ts';
import type { Metrics } from '../observe/metrics.ts';

/** Descriptors kept for the process itself: stdio, the event loop, listeners, logs, Redis, worker pipes. */
const RESERVED_FDS = 64;
/** Assumed when the limit cannot be read (no /proc): the usual default soft limit. */
export const FALLBACK_FD_LIMIT = 1024;

/**
 * The open-files limit of this process. Node has no getrlimit, but Linux shows the limit in
 * /proc/self/limits; Node raised the soft limit to the hard one at start-up, so that is the figure.
 */
export function fdLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(read());
    if (!m?.[1]) return FALLBACK_FD_LIMIT;
    const n = m[1] === 'unlimited' ? 1_048_576 : Number(m[1]);
    return Number.isSafeInteger(n) && n > 0 ? n : FALLBACK_FD_LIMIT;
  } catch {
    return FALLBACK_FD_LIMIT;
  }
}

/**
 * The default total cap for an fd limit. An admitted connection can hold two more descriptors (a
 * proxied download: its upstream socket and a cache file; an upload: its temporary file), so a
 * third of what is left after the reserve: 320 for a 1024-fd systemd service, 178 under 600.
 */
export function derivedTotal(limit: number): number {
  return Math.max(16, Math.floor((limit - RESERVED_FDS) / 3));
}

export type Refusal = 'client' | 'total';

export interface BudgetOptions {
  /** Open connections allowed in this process, every listener together. */
  total: number;
  /** Open connections one client group may hold; 0 = no per-client cap. */
  perClient: number;
  /** Peers held only to the total (trusted reverse proxies carry many clients on their sockets). */
  exempt?: BlockList | null;
  /** IPv6 peers are one client per network of this prefix length (default 64). */
  v6Bits?: number;
}

export class ConnectionBudget {
  readonly total: number;
  readonly perClient: number;
  private open = 0;
  private readonly byClient = new Map<string, number>();
  private readonly byListener = new Map<string, number>();
  private readonly refused = new Map<string, number>();
  private readonly o: BudgetOptions;

  constructor(o: BudgetOptions) {
    this.o = o;
    this.total = o.total;
    this.perClient = o.perClient;
  }

  /** Counts a just-accepted socket until it closes, or destroys it and returns false when over budget. */
  admit(sock: Socket, listener: string): boolean {
    const peer = sock.remoteAddress;
    const group = this.perClient > 0 && !this.exempt(peer) ? addressGroup(peer, this.o.v6Bits) : null;
    const held = group === null ? 0 : (this.byClient.get(group) ?? 0);
    const refusal: Refusal | null =
      group !== null && held >= this.perClient ? 'client' : this.open >= this.total ? 'total' : null;
    if (refusal) {
      sock.destroy();
      const key = `${listener}\0${refusal}`;
      this.refused.set(key, (this.refused.get(key) ?? 0) + 1);
      return false;
    }
    this.open++;
    this.byListener.set(listener, (this.byListener.get(listener) ?? 0) + 1);
    if (group !== null) this.byClient.set(group, held + 1);
    sock.once('close', () => {
      this.open--;
      this.byListener.set(listener, (this.byListener.get(listener) ?? 1) - 1);
      if (group === null) return;
      const n = (this.byClient.get(group) ?? 1) - 1;
      if (n > 0) this.byClient.set(group, n);
      else this.byClient.delete(group);
    });
    return true;
  }

  /** Puts the budget in front of a server's own connection handling (see admitFirst). */
  guard(server: Server, listener: string): void {
    admitFirst(server, (sock) => this.admit(sock, listener));
  }

  /** Open connections, of one listener or all. */
  openCount(listener?: string): number {
    return listener === undefined ? this.open : (this.byListener.get(listener) ?? 0);
  }

  /** Refusals so far by listener and reason. */
  *refusals(): Generator<[[string, Refusal], number]> {
    for (const [key, n] of this.refused) {
      const [listener = '', reason] = key.split('\0');
      yield [[listener, reason as Refusal], n];
    }
  }

  /** Open connections of the group `peer` belongs to. */
  heldBy(peer: string): number {
    return this.byClient.get(addressGroup(peer, this.o.v6Bits)) ?? 0;
  }

  private exempt(peer: string | undefined): boolean {
    const ip = this.o.exempt ? canonicalIp(peer ?? '') : null;
    return ip !== null && this.o.exempt?.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6') === true;
  }
}

/**
 * Runs `admit` before a server's own connection listeners: sockets it refuses never reach them
 * (http.Server's parser set-up is one), so a refused connection costs no parsing work.
 */
export function admitFirst(server: Server, admit: (sock: Socket) => boolean): void {
  const handlers = server.listeners('connection') as ((sock: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (sock: Socket) => {
    if (!admit(sock)) return;
    for (const h of handlers) h.call(server, sock);
  });
}

/** Open connections, caps and refusals as series read from the budget at scrape time. */
export function connectionMetrics(
  metrics: Metrics,
  budget: ConnectionBudget,
  listeners: readonly string[],
): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'devutil_connections_open',
    help: 'open client connections',
    labelNames: ['listener'],
    registers,
    collect() {
      for (const l of listeners) this.set({ listener: l }, budget.openCount(l));
    },
  });
  new Gauge({
    name: 'devutil_connections_limit',
    help: 'connection caps: total per process, per client address (0 = none)',
    labelNames: ['scope'],
    registers,
    collect() {
      this.set({ scope: 'total' }, budget.total);
      this.set({ scope: 'client' }, budget.perClient);
    },
  });
  new Counter({
    name: 'devutil_connections_refused_total',
    help: 'connections closed at accept: over the per-client share or the total',
    labelNames: ['listener', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const [[listener, reason], n] of budget.refusals()) this.inc({ listener, reason }, n);
    },
  });
}
