// The Chromium processes of a test's browsers, found in /proc by the profile directory their command
// lines name (every process of full Chromium carries it, the crash handler that leaves the process
// group too) or by the process group of a browser that named it (a headless shell's zygotes,
// renderers and GPU process do not name it), with their parent and their --type (none: the browser
// itself).
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ChromiumProcess {
  pid: number;
  ppid: number;
  /** 'browser', 'renderer', 'zygote', 'gpu-process', 'utility', 'crashpad-handler'... */
  type: string;
}

/** A fresh directory for a test's browser profiles (BrowserPoolOptions.profileRoot). */
export function profileRoot(): string {
  return mkdtempSync(join(tmpdir(), 'devutil-chromium-test-'));
}

/**
 * The browsers (process group leaders) seen so far under each root: their groups' processes are
 * found after the browser itself has exited, as long as it was seen alive once.
 */
const groups = new Map<string, Set<number>>();

function groupsOf(root: string): Set<number> {
  const g = groups.get(root) ?? new Set<number>();
  groups.set(root, g);
  return g;
}

export function chromiumProcesses(root: string): ChromiumProcess[] {
  const pids = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  const named = pids.flatMap((e) => chromiumProcess(e, root) ?? []);
  const seen = groupsOf(root);
  for (const p of named) if (p.type === 'browser') seen.add(p.pid);
  const mine = new Set(named.map((p) => p.pid));
  return [...named, ...pids.flatMap((e) => (mine.has(Number(e)) ? [] : (groupMember(e, seen) ?? [])))].sort(
    (a, b) => a.pid - b.pid,
  );
}

/**
 * The browsers (Chromium's top processes) this process started, for `root`: what
 * `chromiumProcesses(root)` filtered to type 'browser' and parent `process.pid` gives, read from
 * this process's children lists instead of every /proc entry, so a test may sample it every few ms
 * on a machine running hundreds of processes.
 */
export function childBrowsers(root: string): ChromiumProcess[] {
  const tasks = `/proc/${process.pid}/task`;
  const pids = new Set<string>();
  for (const t of readdirSync(tasks))
    try {
      for (const pid of readFileSync(`${tasks}/${t}/children`, 'utf8').split(' ')) if (pid) pids.add(pid);
    } catch {} // a thread that ended since the listing
  return [...pids].flatMap((e) => {
    const p = chromiumProcess(e, root);
    if (p?.type === 'browser') groupsOf(root).add(p.pid);
    return p?.type === 'browser' && p.ppid === process.pid ? [p] : [];
  });
}

/** Process `pid` when it is a live member of one of the process groups `leaders`. */
function groupMember(pid: string, leaders: Set<number>): ChromiumProcess | null {
  if (leaders.size === 0) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z' || !leaders.has(Number(pgid))) return null;
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    return { pid: Number(pid), ppid: Number(ppid), type: /--type=(\S+)/.exec(cmd)?.[1] ?? 'browser' };
  } catch {
    return null;
  }
}

/** Process `pid` when it is a live process of a browser profiled under `root`. */
function chromiumProcess(pid: string, root: string): ChromiumProcess | null {
  try {
    // Chromium rewrites its children's command lines as one space-separated string.
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    if (!cmd.includes(root)) return null;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state === 'Z') return null; // exited, not yet reaped
    const type =
      /--type=(\S+)/.exec(cmd)?.[1] ?? (cmd.includes('crashpad_handler') ? 'crashpad-handler' : 'browser');
    return { pid: Number(pid), ppid: Number(ppid), type };
  } catch {
    return null; // gone since the listing
  }
}

/** A loopback HTTP server that counts the requests that reach it (a page must reach none). */
export interface Trap {
  readonly url: string;
  hits(): number;
  close(): void;
}

export async function startTrap(): Promise<Trap> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.end('reached');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`,
    hits: () => hits,
    close: () => server.close(),
  };
}
