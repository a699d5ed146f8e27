// Reading this server's own Prometheus series back, for figures shown elsewhere than /metrics (the
// operator dashboard reads each utility's through its definition). Type imports only: definitions
// use these, and reading the config must not load prom-client.
import type { Registry } from 'prom-client';

export interface Sample {
  value: number;
  labels: Record<string, string | number | undefined>;
}

/** Every sample of the named metric (collect() run first), or null when no such metric is registered. */
export async function samples(registry: Registry, name: string): Promise<Sample[] | null> {
  const m = registry.getSingleMetric(name);
  if (!m) return null;
  return (await m.get()).values as Sample[];
}

/** The sum of the named metric's samples whose labels include `where`; null when it is not registered. */
export async function total(
  registry: Registry,
  name: string,
  where: Record<string, string> = {},
): Promise<number | null> {
  const all = await samples(registry, name);
  if (!all) return null;
  const match = (s: Sample) => Object.entries(where).every(([k, v]) => String(s.labels[k]) === v);
  return all.filter(match).reduce((n, s) => n + s.value, 0);
}

/**
 * Hits and misses from a counter whose `label` says how each lookup went (`hits` and `misses` name
 * its values); null when the counter is not registered.
 */
export async function lookups(
  registry: Registry,
  name: string,
  label: string,
  values: { hits: readonly string[]; misses: readonly string[] },
): Promise<{ hits: number; misses: number } | null> {
  const all = await samples(registry, name);
  if (!all) return null;
  const sum = (of: readonly string[]) =>
    all.filter((s) => of.includes(String(s.labels[label]))).reduce((n, s) => n + s.value, 0);
  return { hits: sum(values.hits), misses: sum(values.misses) };
}
