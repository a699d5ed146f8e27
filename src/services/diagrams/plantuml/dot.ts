// The `dot` the PlantUML JVM runs (class, component, state... diagrams), under the kernel's bounds
// (committed memory, CPU seconds, no core file): a small script in the worker's directory, handed
// to the JVM as GRAPHVIZ_DOT, which the engine reads. The shell sets the bounds on itself with its
// ulimit builtin and execs the real `dot` (two program starts per layout); a shell without those
// options execs it through util-linux prlimit instead (three). A layout that runs away then ends
// at its CPU bound even if nobody kills it, and one that allocates without end fails in its own
// process; the JVM only sees `dot` fail.
import { chmodSync, existsSync, renameSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { boundedArgv, limitTools, shellLimits } from '../../../infra/process/bounds.ts';

/** An executable named `name` on PATH, or undefined. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * Writes the bounded `dot` into `dir` and returns its path; undefined (the JVM finds `dot` itself)
 * when there is no `dot` or no prlimit to bound it with. The script's name carries its bounds: a
 * build directory is shared (by the HTTP workers of one server, by servers an operator points at one
 * DEVUTIL_DIAGRAMS_BUILD_DIR), and a JVM reads the script each time it runs `dot`, so one script per
 * name would give every server the bounds of whichever wrote it last (a server with a 3 s render
 * timeout cut another's 12 s layouts at 5 CPU seconds).
 */
export function boundedDot(dir: string, b: { cpuSeconds: number; dataBytes: number }): string | undefined {
  const dot = process.env['GRAPHVIZ_DOT'] || onPath('dot');
  if (!dot || !limitTools().prlimit) return undefined;
  const prlimit = onPath('prlimit') ?? 'prlimit';
  const argv = boundedArgv([dot], b).map((a) => (a === 'prlimit' ? prlimit : a));
  const script = join(dir, `dot-${b.cpuSeconds}s-${b.dataBytes}b`);
  const tmp = `${script}.${process.pid}.tmp`;
  // 500 starts of a bounded /bin/true: 1.7 ms of CPU each through ulimit, 2.8 ms through prlimit.
  const limits = shellLimits(b);
  const direct = limits ? `${limits} && exec ${quote(dot)} "$@"\n` : '';
  writeFileSync(tmp, `#!/bin/sh\n${direct}exec ${argv.map(quote).join(' ')} "$@"\n`);
  chmodSync(tmp, 0o755);
  renameSync(tmp, script);
  return script;
}
