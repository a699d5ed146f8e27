// The shape of GET /rest/api/v1/admin/stats's `data`: the route builds it (index.ts) and the admin
// page reads it (web/src/admin.ts imports these types), so the two cannot drift. Types only: the
// page's bundle takes nothing from here at run time.
import type { Point, TopRow } from '../../infra/observe/usage/summary.ts';
import type { UtilityCounts, WindowName } from '../../infra/observe/usage/usage.ts';

export type { Point, TopRow, UtilityCounts, WindowName };

export interface Allowance {
  name: string;
  /** Bytes used in the current window (budgets) or stored (quotas), every instance together. */
  used: number;
  /** The total limit; 0 = none. */
  limit: number;
  /** A byte budget's per-client limit; 0 = none. */
  clientLimit?: number;
}

export interface AdminStats {
  window: WindowName;
  stepSeconds: number;
  /** ISO times of the window's first and last step. */
  from: string;
  to: string;
  /** Instances whose counts are in the figures (1 without Redis). */
  instances: number;
  /** True when the counts are shared by every instance (Redis). */
  shared: boolean;
  totals: UtilityCounts;
  series: Point[];
  utilities: (UtilityCounts & { name: string })[];
  topClients: { byBytes: TopRow[]; byRequests: TopRow[] };
  topProxied: { repositories: TopRow[]; packages: TopRow[]; files: TopRow[] };
  caches: { name: string; hits: number; misses: number; hitRatio: number | null }[];
  relay: { running: boolean; activeSessions: number; sessions: number; bytes: number };
  /** Render queues; `limit` is per instance times the instances. */
  queues: { name: string; queued: number; limit: number }[];
  budgets: Allowance[];
  quotas: Allowance[];
  /** The proxy's ecosystem profiles served beside its host-path form (DEVUTIL_PROXY_ECOSYSTEMS). */
  proxyEcosystems: string[];
}
