// CPU per test file for scripts/test.js: what the kernel adds to this process's cutime + cstime
// (/proc/self/stat fields 16 and 17, in clock ticks) when it reaps a child. That sum includes the
// CPU of every descendant the child reaped itself (servers, JVMs, browsers, npm), so the growth
// read when a file's runner has exited is that file's CPU, whichever other files still run.
// Caveats: a process a file leaves behind (reparented to init when the runner's group is killed)
// is counted nowhere; two files that end within the same reaping pass share one reading (the first
// gets both, the second none: rare, and exact at DEVUTIL_TEST_CONCURRENCY=1); without /proc
// (not Linux) nothing is measured.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const tick = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return n > 0 ? n : 100;
})();

/** CPU ms of this process's reaped children so far (cutime + cstime), or undefined without /proc. */
export function reapedCpuMs() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3, the state.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[16 - 3]) + Number(f[17 - 3]);
    return Number.isFinite(ticks) ? (ticks * 1000) / tick : undefined;
  } catch {
    return undefined;
  }
}

/** Hands out the growth of reapedCpuMs() since the last call: call it each time a child exits. */
export function cpuMeter() {
  let last = reapedCpuMs();
  return () => {
    const now = reapedCpuMs();
    if (now === undefined || last === undefined) return undefined;
    const d = now - last;
    last = now;
    return d;
  };
}

/**
 * The share of the machine's CPU time (all cores) that was busy since the last call: user, system,
 * interrupts and steal out of the whole, from /proc/stat's first line; idle and I/O wait count as
 * idle. The first call reads since boot; undefined without /proc.
 */
export function busyMeter() {
  const read = () => {
    try {
      const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
      const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
      const total = f.reduce((s, x) => s + x, 0);
      return { total, idle: f[3] + f[4] };
    } catch {
      return undefined;
    }
  };
  let last = read();
  return () => {
    const now = read();
    if (now === undefined || last === undefined) return undefined;
    const total = now.total - last.total;
    const idle = now.idle - last.idle;
    last = now;
    return total > 0 ? 1 - idle / total : undefined;
  };
}
