// What the dashboard shows beside the request counts, read from what each part already exposes:
// the Prometheus series of the caches, queues, budgets and quotas (the one registry every utility
// reports to) and the relay handle on the context. One table row per cache or queue.
import type { Registry } from 'prom-client';
import type { ServiceContext } from '../../context.ts';
import type { Gauges, Probes } from '../../infra/observe/usage/usage.ts';

interface CacheSeries {
  name: string;
  metric: string;
  label: string;
  hits: readonly string[];
  misses: readonly string[];
}

/** Hit and miss counters per cache, as each utility labels them today. */
const CACHES: readonly CacheSeries[] = [
  {
    name: 'proxy',
    metric: 'devutil_proxy_cache_requests_total',
    label: 'result',
    hits: ['hit', 'revalidated', 'stale'],
    misses: ['miss'],
  },
  {
    name: 'image',
    metric: 'devutil_image_served_total',
    label: 'cache',
    hits: ['memory', 'disk'],
    misses: ['miss'],
  },
  {
    name: 'plantuml',
    metric: 'devutil_plantuml_diagrams_total',
    label: 'cache',
    hits: ['hit'],
    misses: ['miss'],
  },
  {
    name: 'avatar',
    metric: 'devutil_avatar_cache_total',
    label: 'layer',
    hits: ['memory', 'disk'],
    misses: ['render'],
  },
];

export const CACHE_NAMES = CACHES.map((c) => c.name);

/** Work waiting for a render slot, per utility. */
const QUEUES = [
  { name: 'plantuml', metric: 'devutil_plantuml_workers', labels: { state: 'queued' } },
  { name: 'image', metric: 'devutil_image_pool_queued', labels: {} },
  { name: 'avatar', metric: 'devutil_avatar_render_queued', labels: {} },
] as const;

type Sample = { value: number; labels: Record<string, string | number | undefined> };

async function samples(registry: Registry, name: string): Promise<Sample[] | null> {
  const m = registry.getSingleMetric(name);
  if (!m) return null;
  return (await m.get()).values as Sample[];
}

const matches = (s: Sample, labels: Record<string, string>) =>
  Object.entries(labels).every(([k, v]) => String(s.labels[k]) === v);

/** Cumulative counters and current gauges for the recorder (usage.ts) to sample at each flush. */
export function probesOf(ctx: ServiceContext): Probes {
  const reg = ctx.metrics.registry;
  return {
    async counters() {
      const out: Record<string, number> = {};
      for (const c of CACHES) {
        const all = await samples(reg, c.metric);
        if (!all) continue;
        const sum = (values: readonly string[]) =>
          all.filter((s) => values.includes(String(s.labels[c.label]))).reduce((n, s) => n + s.value, 0);
        out[`cache:${c.name}:hit`] = sum(c.hits);
        out[`cache:${c.name}:miss`] = sum(c.misses);
      }
      const relay = ctx.relay.running;
      if (relay) {
        out['relay:bytes'] = relay.bytesProxied;
        const started = await samples(reg, 'devutil_relay_sessions_total');
        out['relay:sessions'] = started?.reduce((n, s) => n + s.value, 0) ?? 0;
      }
      return out;
    },
    async gauges() {
      const out: Gauges = {};
      for (const q of QUEUES) {
        const all = await samples(reg, q.metric);
        if (all)
          out[`queue:${q.name}`] = all.filter((s) => matches(s, q.labels)).reduce((n, s) => n + s.value, 0);
      }
      const relay = ctx.relay.running;
      if (relay) {
        out['relay:instances'] = 1;
        out['relay:active'] = Number(relay.status()['numActiveSessions']) || 0;
      }
      return out;
    },
  };
}

export interface Allowance {
  name: string;
  /** Bytes used in the current window (budgets) or stored (quotas), every instance together. */
  used: number;
  /** The total limit; 0 = none. */
  limit: number;
  /** A byte budget's per-client limit; 0 = none. */
  clientLimit?: number;
}

/**
 * BUDGETS AND QUOTAS SLOT. Byte budgets (the hardening issue's infra/limits/byte-budget.ts) publish
 * devutil_budget_used_bytes{budget} (already counted over every instance) and
 * devutil_budget_limit_bytes{budget,scope}; the files quota publishes devutil_files_stored_bytes
 * against files.quotaBytes. Whatever of these exists on this server is shown; none is an empty list.
 */
export async function allowances(
  ctx: ServiceContext,
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
  const files = (ctx.config as Partial<ServiceContext['config']>).files;
  if (files && files.quotaBytes > 0) {
    const stored = await samples(reg, 'devutil_files_stored_bytes');
    if (stored?.length) quotas.push({ name: 'files', used: stored[0]?.value ?? 0, limit: files.quotaBytes });
  }
  return { budgets, quotas };
}

/** Render queue limits per instance, for "queued of at most". */
export function queueLimits(ctx: ServiceContext): Record<string, number> {
  const c = ctx.config as Partial<ServiceContext['config']>;
  const out: Record<string, number> = {};
  if (c.plantuml) out['plantuml'] = c.plantuml.queueSize;
  if (c.avatar) out['avatar'] = c.avatar.renderQueue;
  if (c.image) out['image'] = c.image.queueLength;
  return out;
}
