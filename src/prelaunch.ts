// What the enabled utilities start before the server is built (the PlantUML worker JVMs): the CLI
// calls it as soon as the config is loaded, before the server's own modules load, so the JVMs and
// Node's loading share the start-up time instead of following each other.
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

/** One run per config object: the CLI starts it early, serve() waits for the same run. */
const runs = new WeakMap<Config, Promise<void>>();

/**
 * Runs each enabled utility's prelaunch once for `config`. A cluster primary serves nothing
 * itself (its HTTP workers each prelaunch), so it starts nothing.
 */
export function prelaunch(config: Config, logger: Logger): Promise<void> {
  if (cluster.isPrimary && workerCount(config.server.workers) > 1) return Promise.resolve();
  let run = runs.get(config);
  if (!run) {
    run = prelaunchAll(config, logger);
    runs.set(config, run);
  }
  return run;
}

async function prelaunchAll(config: Config, logger: Logger): Promise<void> {
  const dataDir = resolve(config.server.dataDir);
  const defs: readonly ServiceDef[] = SERVICES;
  for (const def of defs) {
    if (!def.prelaunch || !isEnabled(config, def)) continue;
    await def.prelaunch({ config, dataDir, logger }).catch((err: unknown) => {
      logger.warn({ err, svc: def.name }, 'prelaunch failed: starting on first use');
    });
  }
}
