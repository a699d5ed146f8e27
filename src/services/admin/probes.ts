// What the dashboard shows beside the request counts: each enabled utility's figures through its
// definition (`dashboard`, see ../define.ts: cache hit ratio, render queue, listener sessions,
// quota) and the byte budgets every budget publishes in /metrics (infra/limits/byte-budget.ts).
// Nothing here names another utility's metrics or config keys.
import type { ServiceContext } from '../../context.ts';
import { samples } from '../../infra/observe/series.ts';
import type { Gauges, Probes } from '../../infra/observe/usage/usage.ts';
import { type Dashboard, isEnabled } from '../define.ts';
import type { Allowance } from './stats.ts';

/** The dashboards of the utilities this server serves, in definition order. */
export async function dashboardsOf(ctx: ServiceContext): Promise<{ name: string; board: Dashboard }[]> {
  const boards = await Promise.all(
    ctx.services.map(async (d) =>
      d.dashboard && isEnabled(ctx.config, d) ? [{ name: d.name, board: await d.dashboard(ctx) }] : [],
    ),
  );
  return boards.flat();
}

/**
 * Cumulative counters and current gauges for the recorder (usage.ts) to sample at each flush, under
 * keys the summary reads back: cache:<name>:hit|miss, <name>:sessions|bytes (counters),
 * queue:<name>, <name>:instances|active (gauges).
 */
export function probesOf(boards: readonly { name: string; board: Dashboard }[]): Probes {
  return {
    async counters() {
      const out: Record<string, number> = {};
      for (const { name, board } of boards) {
        const c = await board.cache?.();
        if (c) {
          out[`cache:${name}:hit`] = c.hits;
          out[`cache:${name}:miss`] = c.misses;
        }
        const s = await board.sessions?.();
        if (s) {
          out[`${name}:bytes`] = s.bytes;
          out[`${name}:sessions`] = s.started;
        }
      }
      return out;
    },
    async gauges() {
      const out: Gauges = {};
      for (const { name, board } of boards) {
        const waiting = await board.queue?.waiting();
        if (waiting !== undefined && waiting !== null) out[`queue:${name}`] = waiting;
        const s = await board.sessions?.();
        if (s) {
          out[`${name}:instances`] = 1;
          out[`${name}:active`] = s.active;
        }
      }
      return out;
    },
  };
}

/**
 * Byte budgets (infra/limits/byte-budget.ts) publish devutil_budget_used_bytes{budget} (already
 * counted over every instance) and devutil_budget_limit_bytes{budget,scope}; quotas come from the
 * utilities' dashboards. Whatever of these exists on this server is shown; none is an empty list.
 */
export async function allowances(
  ctx: ServiceContext,
  boards: readonly { name: string; board: Dashboard }[],
): Promise<{ budgets: Allowance[]; quotas: Allowance[] }> {
  const reg = ctx.metrics.registry;
  const used = (await samples(reg, 'devutil_budget_used_bytes')) ?? [];
  const limits = (await samples(reg, 'devutil_budget_limit_bytes')) ?? [];
  const limit = (name: string, scope: string) =>
    limits.find((l) => l.labels['budget'] === name && l.labels['scope'] === scope)?.value ?? 0;
  const budgets = used.map((s) => {
    const name = String(s.labels['budget'] ?? '');
    return { name, used: s.value, limit: limit(name, 'total'), clientLimit: limit(name, 'client') };
  });
  const quotas: Allowance[] = [];
  for (const { name, board } of boards) {
    const q = await board.quota?.();
    if (q) quotas.push({ name, used: q.used, limit: q.limit });
  }
  return { budgets, quotas };
}
