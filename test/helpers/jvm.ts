// The PlantUML worker JVMs a process started, found by their command line (Linux `ps`).
import { spawnSync } from 'node:child_process';

/** PIDs of `parent`'s PlantUML worker JVMs, not the class-data archive's training run. */
export function workerJvmPids(parent = process.pid): number[] {
  const r = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => l.includes('DevutilPlantumlWorker') && !l.includes('-Ddevutil.train'))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}
