// The relay: identity + one listener for both modes + the joined-client table + sessions + the
// status server. Framework-free; background.ts wires it into the process lifecycle.

import type { Server as HttpServer } from 'node:http';
import type { Server, Socket } from 'node:net';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { ByteBudget } from '../../infra/limits/byte-budget.ts';
import { admitFirst } from '../../infra/limits/conn-budget.ts';
import type { RelayIdentity } from './identity.ts';
import { RateLimits } from './limits.ts';
import { createListener, type Listener } from './listener.ts';
import { type Hub, ProtocolConn } from './protocol-conn.ts';
import { SessionTable } from './sessions.ts';
import { type RelaySettings, relayUri } from './settings.ts';
import { createStatusServer, RateSampler } from './status.ts';

export { type RelaySettings, relayUri } from './settings.ts';

export interface RelayEvents {
  onSessionStart?(): void;
  onRefused?(reason: string): void;
  /** The process's connection budget, asked at accept; false means it closed the socket. */
  admit?(sock: Socket): boolean;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, ...(host ? { host } : {}) }, () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : port);
    });
  });
}

/** Address bytes for SessionInvitation: the advertised IP, or empty (client reuses its relay IP). */
function invitationAddress(host: string): Buffer {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h) === 4) return Buffer.from(h.split('.').map(Number));
  return Buffer.alloc(0);
}

export class Relay implements Hub {
  readonly joined = new Map<string, ProtocolConn>();
  readonly conns = new Set<ProtocolConn>();
  readonly sessions: SessionTable;
  readonly startTime = new Date();
  port = 0;
  statusPort = 0;
  private listener: Listener | null = null;
  private statusServer: HttpServer | null = null;
  private readonly sampler: RateSampler;
  private readonly limits: RateLimits;

  readonly token: string;
  readonly pingIntervalMs: number;
  readonly networkTimeoutMs: number;
  readonly maxMessageBytes: number;
  readonly maxSessions: number;
  readonly invitationAddress: Buffer;
  invitationPort = 0;

  readonly settings: RelaySettings;
  readonly identity: RelayIdentity;
  readonly logger: Logger;
  private readonly events: RelayEvents;
  /** Bytes relayed per client address and in total (config clientBytes, totalBytes). */
  readonly budget: ByteBudget | null;
  private constructor(
    settings: RelaySettings,
    identity: RelayIdentity,
    logger: Logger,
    events: RelayEvents,
    budget: ByteBudget | null,
  ) {
    this.settings = settings;
    this.budget = budget?.enabled ? budget : null;
    this.identity = identity;
    this.logger = logger;
    this.events = events;
    this.token = settings.token;
    this.pingIntervalMs = settings.pingIntervalMs;
    this.networkTimeoutMs = settings.networkTimeoutMs;
    this.maxMessageBytes = settings.maxMessageBytes;
    this.maxSessions = settings.maxSessions;
    this.invitationAddress = invitationAddress(settings.publicHost);
    this.limits = new RateLimits(settings.globalRate, settings.perSessionRate);
    this.sessions = new SessionTable({
      messageTimeoutMs: settings.messageTimeoutMs,
      networkTimeoutMs: settings.networkTimeoutMs,
      maxMessageBytes: settings.maxMessageBytes,
      ...(settings.networkBufferBytes ? { bufferBytes: settings.networkBufferBytes } : {}),
      limits: this.limits,
      logger,
      ...(events.onSessionStart ? { onSessionStart: events.onSessionStart } : {}),
      // Each peer is charged everything its session carried (what it sent plus what it received);
      // the total counts each byte once, like bytesProxied.
      // A session that takes either end past its budget is closed at the next sweep.
      ...(this.budget
        ? {
            onBytes: (ips, n) => {
              this.budget?.charge(ips, n);
              return !this.budget?.over(ips);
            },
          }
        : {}),
    });
    this.sampler = new RateSampler(() => this.sessions.bytesProxied());
  }

  static async start(
    settings: RelaySettings,
    identity: RelayIdentity,
    logger: Logger,
    events: RelayEvents = {},
    budget: ByteBudget | null = null,
  ): Promise<Relay> {
    const r = new Relay(settings, identity, logger, events, budget);
    r.listener = createListener({
      certPem: identity.certPem,
      keyPem: identity.keyPem,
      messageTimeoutMs: settings.messageTimeoutMs,
      networkTimeoutMs: settings.networkTimeoutMs,
      logger,
      ...(events.admit ? { admit: events.admit } : {}),
      onDeadline: () => r.refused('deadline'),
      onTls: (sock, der, firstMessage) => r.conns.add(new ProtocolConn(sock, r, der, firstMessage)),
      onPlain: (sock, firstMessage) => r.sessions.accept(sock, firstMessage),
    });
    try {
      r.port = await listen(r.listener.server, settings.port, settings.host);
      r.invitationPort = settings.publicPort || r.port;
      if (settings.statusPort > 0) {
        r.statusServer = createStatusServer(() => r.status());
        if (events.admit) admitFirst(r.statusServer, events.admit); // same budget as the relay port
        r.statusPort = await listen(r.statusServer, settings.statusPort, settings.host);
      }
    } catch (err) {
      await r.close();
      throw err;
    }
    return r;
  }

  /** Bytes read from session sockets so far, each direction counted once (strelaysrv's figure). */
  get bytesProxied(): number {
    return this.sessions.bytesProxied();
  }

  get uri(): string {
    return relayUri(this.settings.publicHost, this.invitationPort, this.identity.deviceId);
  }

  /**
   * Protocol connections plus active pipe directions over the configured maximum
   * (docs/protocols/syncthing-relay.md §8).
   */
  overLimit(): boolean {
    return this.conns.size + 2 * this.sessions.activeSessions > this.settings.maxConnections;
  }

  get budgeted(): boolean {
    return this.budget !== null;
  }

  /** A store failure counts as spent only in the closed fail mode (ByteBudget throws then). */
  async budgetAllows(ips: readonly string[]): Promise<boolean> {
    if (!this.budget) return true;
    try {
      return (await this.budget.check(ips)).allowed;
    } catch {
      return false;
    }
  }

  refused(reason: string): void {
    this.events.onRefused?.(reason);
  }

  closed(conn: ProtocolConn): void {
    this.conns.delete(conn);
    if (conn.joined && this.joined.get(conn.hex) === conn) {
      this.joined.delete(conn.hex);
      // Stale sessions would make the device's reconnect see "already connected"
      // (docs/protocols/syncthing-relay.md §6).
      this.sessions.closeDevice(conn.id);
    }
  }

  /** The byte budgets: limits, the shared total as last seen, and this relay's refusals. */
  budgetStatus(): Record<string, unknown> {
    const b = this.budget;
    const total = b?.usage() ?? null;
    return {
      client: b?.client.text ?? 'off',
      total: b?.total.text ?? 'off',
      totalUsedBytes: total?.used ?? null,
      totalResetsInSeconds: total?.resetsInSec ?? null,
      refusedClient: b?.refused.client ?? 0,
      refusedTotal: b?.refused.total ?? 0,
    };
  }

  /** strelaysrv's /status document (docs/protocols/syncthing-relay.md §11), plus devutil's byteBudget. */
  status(): Record<string, unknown> {
    const s = this.settings;
    return {
      bytesProxied: this.bytesProxied,
      byteBudget: this.budgetStatus(),
      buildDate: '',
      buildHost: '',
      buildUser: '',
      version: `devutil ${s.version}`,
      goArch: process.arch,
      goOS: process.platform,
      goVersion: `node ${process.version}`,
      goMaxProcs: availableParallelism(),
      goNumRoutine: this.conns.size + 2 * this.sessions.activeSessions,
      kbps10s1m5m15m30m60m: this.sampler.kbps(),
      numActiveSessions: this.sessions.activeSessions,
      numConnections: this.conns.size,
      numPendingSessionKeys: this.sessions.pendingKeys,
      numProxies: 2 * this.sessions.activeSessions,
      options: {
        'network-timeout': Math.round(s.networkTimeoutMs / 1000),
        'ping-interval': Math.round(s.pingIntervalMs / 1000),
        'message-timeout': Math.round(s.messageTimeoutMs / 1000),
        'per-session-rate': s.perSessionRate,
        'global-rate': s.globalRate,
        pools: s.pools ?? [],
        'provided-by': s.providedBy,
      },
      startTime: this.startTime.toISOString(),
      uptimeSeconds: Math.floor((Date.now() - this.startTime.getTime()) / 1000),
    };
  }

  /** Closes every session and connection, then the listeners (SIGTERM). */
  async close(): Promise<void> {
    this.sampler.stop();
    this.sessions.closeAll();
    await this.budget?.flush();
    for (const c of this.conns) c.close('shutdown');
    const waits: Promise<void>[] = [];
    if (this.listener) waits.push(this.listener.close());
    if (this.statusServer) {
      const srv = this.statusServer;
      waits.push(new Promise((resolve) => srv.close(() => resolve())));
      srv.closeAllConnections();
    }
    await Promise.all(waits);
  }
}
