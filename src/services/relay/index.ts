// GET /rest/api/v1/relay: the Syncthing relay URI and live stats (v1 envelope). The relay itself is
// a background listener (background.ts) recorded on its handle (handle.ts); in cluster mode it lives in worker 1
// only, so other workers answer from the stored identity and read the stats from the relay's
// status port when it is on.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { readCapped } from '../../infra/egress/capped-body.ts';
import { createEgress, type Egress } from '../../infra/egress/client.ts';
import { unavailable } from '../../infra/http/errors.ts';
import { RELAY } from './handle.ts';
import { readIdentity } from './identity.ts';
import { relaySettings, relayUri } from './settings.ts';

const STAT_KEYS = [
  'numConnections',
  'numActiveSessions',
  'numPendingSessionKeys',
  'numProxies',
  'bytesProxied',
  'byteBudget',
  'kbps10s1m5m15m30m60m',
  'startTime',
  'uptimeSeconds',
] as const;

function pick(status: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(STAT_KEYS.map((k) => [k, status[k] ?? null]));
}

/** Stats from the status port of the relay in another worker; null when off or unreachable. */
async function remoteStats(ctx: ServiceContext, http: Egress): Promise<Record<string, unknown> | null> {
  const { statusPort, host } = ctx.config.relay;
  if (statusPort === 0) return null;
  const h = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  try {
    const res = await http.request({
      origin: `http://${h.includes(':') ? `[${h}]` : h}:${statusPort}`,
      path: '/status',
      method: 'GET',
      signal: AbortSignal.timeout(1000),
    });
    const body = await readCapped(res.body, 64 * 1024);
    if (res.statusCode !== 200) return null;
    return pick(JSON.parse(body.toString('utf8')) as Record<string, unknown>);
  } catch {
    return null;
  }
}

const relay: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  app.envelopes.mount('/rest/api/v1/relay', 'v1');
  const settings = relaySettings(ctx.config, ctx.urls.base, ctx.version);
  const handle = ctx.local(RELAY);
  // Our own relay's status port, on an address the operator configured: not a target a request or an
  // upstream chose, so the private-address guard (which would refuse loopback) is off for it.
  const http = createEgress({ guard: false, timeoutMs: 1000 });
  app.addHook('onClose', async () => {
    await http.close();
  });

  app.get(
    '/rest/api/v1/relay',
    {
      schema: {
        summary: 'Syncthing relay address and live stats',
        description: 'relay://<host>:<port>/?id=<DEVICE_ID> for Syncthing, plus strelaysrv-style counters.',
        tags: ['relay'],
      },
    },
    async () => {
      const r = handle.running;
      if (r) {
        return {
          status: 1,
          message: 'success',
          data: {
            uri: r.uri,
            deviceId: r.identity.deviceId,
            port: r.invitationPort,
            running: true,
            stats: pick(r.status()),
            pools: handle.pools(),
          },
        };
      }
      const id = readIdentity(ctx.dataDir);
      if (!id) throw unavailable('the relay has not created its identity yet', 5);
      const port = settings.publicPort || settings.port;
      const stats = await remoteStats(ctx, http);
      return {
        status: 1,
        message: 'success',
        data: {
          uri: relayUri(settings.publicHost, port, id.deviceId),
          deviceId: id.deviceId,
          port,
          running: stats !== null,
          stats,
          note: handle.failure
            ? 'the relay failed to start; see the server log'
            : stats
              ? 'stats read from the relay status port (the relay runs in another worker)'
              : 'the relay runs in another worker process; enable its status port for live stats',
        },
      };
    },
  );
};

export default relay;
