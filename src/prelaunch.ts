// What the enabled utilities start before the server is built (the PlantUML worker JVMs): the CLI
// calls it as soon as the config is loaded, before the server's own modules load, so the JVMs and
// Node's loading share the start-up time instead of following each other. What each prelaunch
// started is handed to buildServer explicitly (Prelaunched) and taken by the utility's plugin.
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { isEnabled, type ServiceDef } from './services/define.ts';
import { SERVICES } from './services/index.ts';

export function workerCount(setting: string): number {
  return setting === 'auto' ? availableParallelism() : Number(setting);
}

/**
 * What the prelaunches started, by utility name. A plugin takes its own once; what no plugin took
 * (a utility the built server does not serve) is closed with close().
 */
export class Prelaunched {
  private readonly handles = new Map<string, { value: unknown; dataDir: string }>();

  set(name: string, value: unknown, dataDir: string): void {
    this.handles.set(name, { value, dataDir });
  }

  /** The handle `name` started for `dataDir`, once; undefined if none (or for another directory). */
  take<T>(name: string, dataDir: string): T | undefined {
    const h = this.handles.get(name);
    this.handles.delete(name);
    if (!h) return undefined;
    if (h.dataDir === dataDir) return h.value as T;
    void (h.value as { close?: () => unknown }).close?.();
    return undefined;
  }

  /** Closes whatever was started and not taken. */
  async close(): Promise<void> {
    const left = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(left.map((h) => (h.value as { close?: () => unknown }).close?.()));
  }
}

/**
 * Runs each enabled utility's prelaunch for `config`. A cluster primary serves nothing itself (its
 * HTTP workers each prelaunch), so it starts nothing.
 */
export async function prelaunch(config: Config, logger: Logger): Promise<Prelaunched> {
  const out = new Prelaunched();
  if (cluster.isPrimary && workerCount(config.server.workers) > 1) return out;
  const dataDir = resolve(config.server.dataDir);
  const defs: readonly ServiceDef[] = SERVICES;
  for (const def of defs) {
    if (!def.prelaunch || !isEnabled(config, def)) continue;
    try {
      const handle = await def.prelaunch({ config, dataDir, logger });
      if (handle !== undefined) out.set(def.name, handle, dataDir);
    } catch (err) {
      logger.warn({ err, svc: def.name }, 'prelaunch failed: starting on first use');
    }
  }
  return out;
}
