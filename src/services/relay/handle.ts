// The relay of one server: the listener running in this process, if any (worker 1 in cluster mode),
// or why it failed to start. It is the relay's per-server state (ctx.local(RELAY)): the background
// listener sets it, the endpoint and the dashboard read it.
import type { LocalKey } from '../define.ts';
import type { PoolStatus } from './pool.ts';
import type { Relay } from './relay.ts';

export interface RelayHandle {
  running: Relay | null;
  /** Why the relay is not running in this process although enabled, if it failed to start. */
  failure: string | null;
  /** Where the running relay stands with each pool it joins (DEVUTIL_RELAY_POOLS). */
  pools: () => PoolStatus[];
}

/** The key of this server's relay handle: `ctx.local(RELAY)`. */
export const RELAY: LocalKey<RelayHandle> = {
  make: () => ({ running: null, failure: null, pools: () => [] }),
};

/** Sessions that started piping, counted in /metrics by background.ts. */
export const SESSIONS_METRIC = 'devutil_relay_sessions_total';
