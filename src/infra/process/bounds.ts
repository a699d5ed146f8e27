// Starting a child process under limits the kernel enforces, for work that runs a stranger's input
// (diagram engines, system programs). Node cannot set a child's resource limits itself (no
// setrlimit, no pre-exec hook), so the command is prefixed with util-linux programs that set them
// and exec it: prlimit (RLIMIT_DATA, RLIMIT_CPU, RLIMIT_FSIZE, no core files), setpriv --pdeathsig
// (the kernel kills the child when the server dies) and nice (a lower CPU priority). Where one of
// them is missing the command runs without its bound; residentBytes() lets the caller watch memory
// itself as a second line.
//
// RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 DATA counts the private writable memory a process has
// committed (heaps, malloc, a WebAssembly memory's used part), while AS counts address space, and
// V8 reserves several GiB of it (unusable, PROT_NONE) for every WebAssembly memory, so an AS limit
// low enough to matter stops WebAssembly from loading at all.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface ProcessBounds {
  /** RLIMIT_DATA: an allocation past it fails (V8, malloc and mmap get ENOMEM). */
  dataBytes?: number;
  /** RLIMIT_CPU: SIGXCPU at this many seconds of CPU, SIGKILL a second later. */
  cpuSeconds?: number;
  /** RLIMIT_FSIZE: a write past this many bytes in one file fails (SIGXFSZ). */
  fileBytes?: number;
  /** Start at this nice value, 1-19 (every thread the child starts inherits it). */
  nice?: number;
  /** The kernel sends SIGKILL when the process that started it dies. */
  dieWithParent?: boolean;
}

let tools: { prlimit: boolean; setpriv: boolean; nice: boolean } | undefined;

function onPath(name: string): boolean {
  return (process.env['PATH'] ?? '/usr/bin:/bin')
    .split(delimiter)
    .some((dir) => dir !== '' && existsSync(join(dir, name)));
}

let onPathTools: { prlimit: boolean; nice: boolean } | undefined;

/**
 * prlimit and nice: found on PATH (looked up once, no child started). They have had what is used
 * here since they exist; a command that asks for no setpriv bound needs only these.
 */
export function limitTools(): { prlimit: boolean; nice: boolean } {
  onPathTools ??= { prlimit: onPath('prlimit'), nice: onPath('nice') };
  return onPathTools;
}

/**
 * Which of the helper programs this system has (looked up once). setpriv gained --pdeathsig in
 * util-linux 2.33, so it is asked (a child started and waited for).
 */
export function boundTools(): { prlimit: boolean; setpriv: boolean; nice: boolean } {
  tools ??= found(
    onPath('setpriv') &&
      (spawnSync('setpriv', SETPRIV_ASK, { encoding: 'utf8', timeout: 5000 }).stdout ?? ''),
  );
  return tools;
}

const SETPRIV_ASK = ['--help'];

function found(setprivHelp: string | false): { prlimit: boolean; setpriv: boolean; nice: boolean } {
  const setpriv = setprivHelp !== false && setprivHelp.includes('--pdeathsig');
  return { ...limitTools(), setpriv };
}

let probing: Promise<{ prlimit: boolean; setpriv: boolean; nice: boolean }> | undefined;

/**
 * boundTools() without blocking: setpriv is asked by a child the event loop does not wait for. A
 * serving process calls it first (the PlantUML engine's start runs while Node loads the server's
 * modules, and the blocking question held that loading up: 20-300 ms, more on a loaded machine).
 */
export function probeBoundTools(): Promise<{ prlimit: boolean; setpriv: boolean; nice: boolean }> {
  if (tools) return Promise.resolve(tools);
  probing ??= new Promise<string | false>((resolve) => {
    if (!onPath('setpriv')) return resolve(false);
    execFile('setpriv', SETPRIV_ASK, { encoding: 'utf8', timeout: 5000 }, (_err, stdout) =>
      resolve(stdout ?? ''),
    );
  }).then((help) => {
    tools ??= found(help);
    return tools;
  });
  return probing;
}

/** `argv` prefixed with the programs that apply `b` (those this system has). */
export function boundedArgv(argv: readonly string[], b: ProcessBounds): string[] {
  // setpriv is asked about only when its bound is wanted: the other bounds need no child started.
  const t = limitTools();
  const out: string[] = [];
  if (b.dieWithParent && boundTools().setpriv) out.push('setpriv', '--pdeathsig', 'KILL', '--');
  const limits: string[] = [];
  if (b.dataBytes) limits.push(`--data=${Math.floor(b.dataBytes)}`);
  if (b.cpuSeconds) {
    const s = Math.max(1, Math.ceil(b.cpuSeconds));
    limits.push(`--cpu=${s}:${s + 1}`);
  }
  if (b.fileBytes) limits.push(`--fsize=${Math.floor(b.fileBytes)}`);
  if (t.prlimit) out.push('prlimit', ...limits, '--core=0', '--');
  if (b.nice && t.nice) out.push('nice', '-n', String(Math.min(19, Math.max(1, Math.round(b.nice)))), '--');
  out.push(...argv);
  return out;
}

/**
 * Shell commands that set `b`'s CPU, data and core bounds on the shell itself with its ulimit
 * builtin (dash, bash and busybox sh have these options; POSIX asks only for -f), joined with &&
 * and silent when they fail: a command the shell then execs runs under the same bounds as
 * boundedArgv's prlimit gives it, one program start fewer. Undefined when `b` asks for a bound this
 * does not set (setpriv's, nice, a file size: ulimit -f counts in blocks of a size shells differ on).
 */
export function shellLimits(b: ProcessBounds): string | undefined {
  if (b.dieWithParent || b.nice || b.fileBytes) return undefined;
  const cmds: string[] = [];
  if (b.cpuSeconds) {
    const s = Math.max(1, Math.ceil(b.cpuSeconds));
    // The soft limit first: a hard limit under the soft one in force (unlimited) is refused.
    cmds.push(`ulimit -S -t ${s}`, `ulimit -H -t ${s + 1}`);
  }
  // Both limits (neither -S nor -H), in KiB.
  if (b.dataBytes) cmds.push(`ulimit -d ${Math.floor(b.dataBytes / 1024)}`);
  cmds.push('ulimit -c 0');
  return cmds.map((c) => `${c} 2>/dev/null`).join(' && ');
}

const PAGE = 4096;
/** USER_HZ: Linux reports process times in 1/100 s on every architecture it runs on. */
const CLOCK_TICKS = 100;

/**
 * Resident and committed data memory of a process (/proc/<pid>/statm: RSS and data + stack, the
 * figure RLIMIT_DATA bounds), or undefined when it is gone or this is not Linux.
 */
export function memoryOf(pid: number): { rss: number; data: number } | undefined {
  try {
    const f = readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ');
    const rss = Number(f[1]) * PAGE;
    const data = Number(f[5]) * PAGE;
    return Number.isFinite(rss) && Number.isFinite(data) ? { rss, data } : undefined;
  } catch {
    return undefined;
  }
}

/** CPU time a process has used, user and system, in ms (/proc/<pid>/stat), or undefined. */
export function cpuMillis(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name (which may hold spaces): state is [0], utime [11], stime [12].
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(f[11]) + Number(f[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS) : undefined;
  } catch {
    return undefined;
  }
}

/** Resident memory of a process, or undefined when it is gone or this is not Linux. */
export function residentBytes(pid: number): number | undefined {
  return memoryOf(pid)?.rss;
}
