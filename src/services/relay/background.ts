// Process wiring for the relay: its settings (settings.ts), the persistent identity, Prometheus metrics
// through ctx.metrics, the start-up log line with the relay URI, and the listener the relay's
// definition starts (definition.ts); it records itself on the relay's handle (handle.ts).
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { type BackgroundDef, ListenError } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { createEgress } from '../../infra/egress/client.ts';
import { budgetMetrics, createByteBudget } from '../../infra/limits/byte-budget.ts';
import type { Metrics } from '../../infra/observe/metrics.ts';
import { RELAY, SESSIONS_METRIC } from './handle.ts';
import { loadOrCreateIdentity } from './identity.ts';
import { PoolMembership, poolHost, poolRelayUrl } from './pool.ts';
import { Relay, type RelayEvents } from './relay.ts';
import { relaySettings } from './settings.ts';

export { relaySettings, splitHostPort } from './settings.ts';

/**
 * Joins the configured pools with the relay's own certificate (pool.ts); null when none is
 * configured, or a token keeps the relay private.
 */
function joinPools(
  ctx: ServiceContext,
  relay: Relay,
  log: Logger,
): { m: PoolMembership; close(): Promise<void> } | null {
  const c = ctx.config.relay;
  if (c.pools.length === 0) return null;
  if (c.token) {
    log.warn({ pools: c.pools }, 'relay pools not joined: a token keeps the relay private');
    return null;
  }
  const s = relay.settings;
  // The pools are the operator's, yet reached like every other upstream: through the outbound proxy
  // and under the allowed ranges of the egress section (a relay behind a corporate proxy can join).
  const http = createEgress({
    resolve: ctx.config.egress.resolve,
    policy: ctx.config.egress,
    ...(c.poolCa ? { caFile: c.poolCa } : {}),
    clientCert: { cert: relay.identity.certPem, key: relay.identity.keyPem },
    timeoutMs: 30_000,
    connections: 1,
    keepAliveTimeoutMs: 1000,
  });
  const m = new PoolMembership({
    pools: c.pools,
    http,
    logger: log,
    relayUrl: async () =>
      poolRelayUrl({
        host: await poolHost(s.publicHost),
        port: relay.invitationPort,
        deviceId: relay.identity.deviceId,
        pingIntervalMs: s.pingIntervalMs,
        networkTimeoutMs: s.networkTimeoutMs,
        statusPort: relay.statusPort,
        providedBy: s.providedBy,
      }),
  });
  log.warn({ pools: c.pools }, 'relay joining pools: it relays for anyone the pools send to it');
  m.start();
  return {
    m,
    close: async () => {
      m.close();
      await http.close();
    },
  };
}

/** Scrape-time gauges and counters over the relay's own tallies (no per-chunk metric cost). */
export function relayMetrics(metrics: Metrics, relay: () => Relay | null): RelayEvents {
  const registers = [metrics.registry];
  const g = (name: string, help: string, value: (r: Relay) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const r = relay();
        this.set(r ? value(r) : 0);
      },
    });
  g('devutil_relay_connections', 'open protocol-mode (TLS) connections', (r) => r.conns.size);
  g('devutil_relay_joined_clients', 'clients joined and waiting for invitations', (r) => r.joined.size);
  g('devutil_relay_sessions_active', 'paired sessions currently piping', (r) => r.sessions.activeSessions);
  g('devutil_relay_session_keys_pending', 'unused session keys', (r) => r.sessions.pendingKeys);
  new Counter({
    name: 'devutil_relay_bytes_proxied_total',
    help: 'bytes read from session sockets (each direction counted once)',
    registers,
    collect() {
      this.reset();
      this.inc(relay()?.bytesProxied ?? 0);
    },
  });
  new Gauge({
    name: 'devutil_relay_rate_kbps',
    help: 'average proxy rate in kbit/s over the window (as strelaysrv /status)',
    labelNames: ['window'],
    registers,
    collect() {
      const k = relay()?.status().kbps10s1m5m15m30m60m as number[] | undefined;
      ['10s', '1m', '5m', '15m', '30m', '60m'].forEach((w, i) => {
        this.set({ window: w }, k?.[i] ?? 0);
      });
    },
  });
  const sessions = metrics.counter(SESSIONS_METRIC, 'sessions that started piping');
  const refused = metrics.counter(
    'devutil_relay_refused_total',
    'connections refused or closed by the relay',
    ['reason'],
  );
  return { onRefused: (reason) => refused.inc({ reason }), onSessionStart: () => sessions.inc() };
}

/** The port a failed listen asked for: the status port fails with its own number in the error. */
function listenPort(err: unknown, fallback: number): number {
  const p = (err as { port?: unknown } | null)?.port;
  return typeof p === 'number' ? p : fallback;
}

export const relayBackground: BackgroundDef = {
  name: 'relay',
  async start(ctx: ServiceContext) {
    const handle = ctx.local(RELAY);
    // The relay's own listener, in /readyz: only the relay is degraded when it is not listening.
    ctx.readiness.add(
      'relay',
      () =>
        handle.running
          ? { ok: true, detail: `listening on ${handle.running.port}` }
          : { ok: false, detail: handle.failure ?? 'not listening' },
      ['relay'],
    );
    const identity = loadOrCreateIdentity(ctx.dataDir);
    const log = ctx.logger.child({ svc: 'relay' });
    if (identity.created) log.info({ deviceId: identity.deviceId }, 'relay identity created');
    const settings = relaySettings(ctx.config, ctx.urls.base, ctx.version);
    const events = {
      ...relayMetrics(ctx.metrics, () => handle.running),
      admit: (sock: Socket) => ctx.connections.admit(sock, 'relay'),
    };
    const budget = createByteBudget(
      'relay',
      { client: ctx.config.relay.clientBytes, total: ctx.config.relay.totalBytes },
      {
        state: ctx.state,
        v6Bits: ctx.config.server.clientIpv6Prefix,
        failMode: ctx.config.redis.failMode,
        logger: log,
      },
    );
    const unlist = budgetMetrics(ctx.metrics, budget);
    let relay: Relay;
    try {
      relay = await Relay.start(settings, identity, log, events, budget);
    } catch (err) {
      unlist();
      await budget.close();
      handle.failure = err instanceof Error ? err.message : String(err);
      // A port that cannot be taken stops start-up (main.ts says so in one line); anything else
      // is a fault of the relay and keeps its stack.
      const code = (err as NodeJS.ErrnoException | null)?.code;
      if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
        const port = listenPort(err, settings.port);
        const which = port === settings.statusPort && port !== settings.port ? 'status ' : '';
        throw new ListenError(`the relay ${which}port `, settings.host, port, err);
      }
      log.error({ err, port: settings.port }, 'relay failed to start');
      throw err;
    }
    handle.running = relay;
    handle.failure = null;
    const pools = joinPools(ctx, relay, log);
    handle.pools = () => pools?.m.status() ?? [];
    log.info(
      { uri: relay.uri, port: relay.port, statusPort: relay.statusPort || undefined },
      `relay listening: ${relay.uri}`,
    );
    return {
      async close() {
        if (handle.running === relay) {
          handle.running = null;
          handle.pools = () => [];
        }
        await pools?.close();
        await relay.close();
        unlist();
        await budget.close();
      },
    };
  },
};
