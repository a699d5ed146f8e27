// The relay's figures on the operator's dashboard (see Dashboard in ../define.ts): sessions open,
// started and bytes carried by the relay running in this process.
import type { ServiceContext } from '../../context.ts';
import { total } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';
import { RELAY, SESSIONS_METRIC } from './handle.ts';

export function relayDashboard(ctx: ServiceContext): Dashboard {
  return {
    async sessions() {
      const relay = ctx.local(RELAY).running;
      if (!relay) return null;
      return {
        active: Number(relay.status()['numActiveSessions']) || 0,
        started: (await total(ctx.metrics.registry, SESSIONS_METRIC)) ?? 0,
        bytes: relay.bytesProxied,
      };
    },
  };
}
