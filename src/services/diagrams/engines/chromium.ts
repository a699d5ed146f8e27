// One headless Chromium process (full Chromium or its headless shell, find-chromium.ts) for the
// diagram browser pool, started so that nothing it starts can outlive it or the server: its own
// process group (every zygote, renderer, GPU and utility process is in it), killed as a whole; full
// Chromium's crash handler, which daemonises itself out of the group, exits with the browser and is
// killed too if it does not (found by the profile directory it names, as is every process of full
// Chromium; the headless shell starts no crash handler); the kernel's parent-death signal (setpriv --pdeathsig, util-linux) ends it if the server dies
// without closing it (kill -9), and it also shuts down when its DevTools pipe closes. It gets a
// fresh profile and a bare environment (none of the server's variables, secrets included), and no
// network: host names resolve nowhere and every connection goes to a proxy that does not exist (the
// pages' requests are also intercepted, browser-pool.ts).
// Chromium's own sandbox (its processes in user namespaces of their own, under seccomp-bpf filters)
// is kept unless the server runs as root (Chromium refuses it there) or the operator says otherwise
// (`sandbox`): it needs unprivileged user namespaces, which some hosts and container runtimes refuse
// (Docker's default seccomp profile does; podman's allows them). Chromium then exits at start saying
// "No usable sandbox": `on` fails with a message saying what to change, `auto` starts it again
// without its sandbox, and every later browser of that executable too.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { Cdp } from './cdp.ts';

export interface ChromiumOptions {
  executable: string;
  /** V8 heap cap of each page (MiB). */
  heapMb: number;
  /** How long the browser may take to answer its first command. */
  startTimeoutMs: number;
  /** Largest DevTools message (an SVG comes back in one). */
  maxMessage: number;
  /** Where its profile directory is made (default: the system's temporary directory). */
  profileRoot?: string;
  /** Chromium's own sandbox (default on; see the top of this file). */
  sandbox?: SandboxMode;
}

/** on: required; auto: kept where it can start, else none; off: none (--no-sandbox). */
export type SandboxMode = 'on' | 'auto' | 'off';

export interface Chromium {
  readonly pid: number;
  readonly cdp: Cdp;
  /** Resolves once the browser process has exited and its group was killed. */
  readonly exited: Promise<void>;
  /** Whether it runs in Chromium's own sandbox. */
  readonly sandboxed: boolean;
  /** The last lines it wrote to stderr (start-up failures say why there). */
  stderr(): string;
  /** SIGKILL to the whole process group; the profile directory is removed on exit. */
  kill(): void;
}

const FLAGS = [
  '--headless',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-extensions',
  '--disable-default-apps',
  '--mute-audio',
  '--hide-scrollbars',
  // Fewer processes and less memory (issue 35), measured on Chromium 156 with one Mermaid and one
  // BPMN page drawn, PSS of every process of the browser: no spare renderer started ahead of a page,
  // no WebUI omnibox popups preloaded for the window (the AI-mode one has a feature of its own:
  // 55 MiB, a renderer), the network service in the browser process (it runs unsandboxed on Linux
  // either way, and every request of a page is answered or refused by the browser before it: 14 MiB,
  // a utility process), and no software GL in the GPU process, which only composites here
  // (--disable-gpu; 12-16 MiB). The start-up tab is closed too (closeStartPages). Together: full
  // Chromium 12 processes, 425 MiB, to 9, 355 MiB; its headless shell (find-chromium.ts) 8, 256 MiB,
  // to 6, 226 MiB. Measured and left out: --in-process-gpu (one process fewer, the same PSS),
  // --no-zygote (+59 MiB: every renderer a fresh exec), V8's --lite-mode and a garbage collection or a
  // memory-pressure signal after a page loads (no change), --single-process (pages would share one
  // renderer: a page's crash or timeout would end the others).
  '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,SpareRendererForSitePerProcess',
  '--enable-features=NetworkServiceInProcess2',
  '--disable-software-rasterizer',
  // The pages are tabs of one window (browser-page.ts): a tab in the background renders at full
  // speed, its timers unthrottled and its renderer at the priority of the others.
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
  // No network even if a request got past the page's interception: names resolve nowhere, and
  // every connection (loopback included) goes to a proxy that is not there.
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--proxy-server=socks5://127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--remote-debugging-pipe',
];

/** The browsers alive in this process (group, profile): killed if it exits without closing them. */
const live = new Map<number, string>();
let hooked = false;

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {}
}

/**
 * Every process whose command line names `profile` (full Chromium's processes carry
 * --user-data-dir=<profile>, its crash handler --database=<profile>/...), killed: what left the
 * process group. (--disable-crashpad-for-testing would keep the handler from starting, but it
 * also turns off the DevTools request interception the pages rely on.)
 */
function killByProfile(profile: string): void {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return;
  }
  const mark = Buffer.from(profile);
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`).includes(mark)) process.kill(Number(e), 'SIGKILL');
    } catch {}
  }
}

let setpriv: boolean | undefined;
/** Whether util-linux's setpriv (with --pdeathsig) is there to start the browser through. */
function hasSetpriv(): boolean {
  setpriv ??= spawnSync('setpriv', ['--help'], { encoding: 'utf8', timeout: 5000 }).stdout?.includes(
    '--pdeathsig',
  );
  return setpriv;
}

/** Chromium's own sandbox cannot start here (its stderr says "No usable sandbox"). */
export class SandboxUnusable extends Error {}

/** Executables whose sandbox could not start here: under `auto` they start without it from then on. */
const unsandboxable = new Set<string>();

export async function launchChromium(o: ChromiumOptions): Promise<Chromium> {
  const mode = o.sandbox ?? 'on';
  // Chromium refuses to run as root with its sandbox.
  const bare =
    process.getuid?.() === 0 || mode === 'off' || (mode === 'auto' && unsandboxable.has(o.executable));
  try {
    return await start(o, !bare);
  } catch (err) {
    if (bare || mode !== 'auto' || !(err instanceof SandboxUnusable)) throw err;
    unsandboxable.add(o.executable);
    return start(o, false);
  }
}

async function start(o: ChromiumOptions, sandboxed: boolean): Promise<Chromium> {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const [pid, profile] of live) {
        killGroup(pid);
        killByProfile(profile);
      }
    });
  }
  const profile = mkdtempSync(join(o.profileRoot ?? tmpdir(), 'devutil-chromium-'));
  const args = [
    ...FLAGS,
    ...(sandboxed ? [] : ['--no-sandbox']),
    `--js-flags=--max-old-space-size=${o.heapMb}`,
    `--user-data-dir=${profile}`,
    'about:blank',
  ];
  const argv = hasSetpriv()
    ? ['setpriv', '--pdeathsig', 'KILL', '--', o.executable, ...args]
    : [o.executable, ...args];
  let proc: ChildProcess;
  try {
    proc = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: profile,
        XDG_CONFIG_HOME: profile,
        XDG_CACHE_HOME: profile,
        LANG: 'C.UTF-8',
        TZ: 'UTC',
      },
    });
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
  const pid = proc.pid ?? 0;
  if (pid) live.set(pid, profile);
  let tail = '';
  proc.stderr?.on('data', (b: Buffer) => {
    tail = (tail + b.toString('utf8')).slice(-4096);
  });
  const cdp = new Cdp(proc.stdio[3] as Writable, proc.stdio[4] as Readable, o.maxMessage);
  const exited = new Promise<void>((resolve) => {
    const done = () => {
      // Whatever of the group is still there (a renderer that outlived the browser) goes too.
      if (pid) {
        killGroup(pid);
        live.delete(pid);
      }
      killByProfile(profile);
      cdp.fail(new Error('the browser exited'));
      rmSync(profile, { recursive: true, force: true });
      resolve();
    };
    proc.once('exit', done);
    proc.once('error', (err) => {
      tail += `\n${err.message}`;
      if (!pid) done();
    });
  });
  const chromium: Chromium = {
    pid,
    cdp,
    exited,
    sandboxed,
    stderr: () => tail.trim(),
    kill: () => {
      if (pid) killGroup(pid);
    },
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      cdp.send('Browser.getVersion').then(() => closeStartPages(cdp)),
      exited.then(() => {
        throw new Error(`the browser exited at start: ${lastLines(tail)}`);
      }),
      new Promise((_r, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the browser did not answer within ${o.startTimeoutMs} ms`)),
          o.startTimeoutMs,
        );
      }),
    ]);
  } catch (err) {
    chromium.kill();
    await exited;
    await drained(proc.stderr);
    // Said on stderr before it exits (its DevTools pipe may close first: the error is the pipe's).
    // A runtime that answers ENOSYS, not EPERM, to the user namespace (podman's errno for what its
    // profile denies) fails a check of the sandbox's instead.
    if (sandboxed && /No usable sandbox|sandbox\/linux\/services\/credentials\.cc.*Check failed/.test(tail))
      throw new SandboxUnusable(
        "Chromium's sandbox cannot start here: it needs user namespaces, which this host or container refuses (Docker's default seccomp profile does). Allow them, or set DEVUTIL_DIAGRAMS_MERMAID_BROWSER_SANDBOX=auto (or off) to run the browser without its own sandbox",
      );
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return chromium;
}

/** The rest of a stream, once its process is gone (at most a second: a stray child may hold it). */
function drained(stream: Readable | null): Promise<void> {
  if (!stream || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Closes the blank tab the browser opens at start (it has a renderer process of its own, 5-14 MiB
 * PSS, and draws nothing: every page of the pool is a tab it opens itself). The browser stays up
 * with no tab.
 */
async function closeStartPages(cdp: Cdp): Promise<void> {
  const { targetInfos } = await cdp.send<{ targetInfos: { targetId: string; type: string; url: string }[] }>(
    'Target.getTargets',
  );
  for (const t of targetInfos)
    if (t.type === 'page' && t.url === 'about:blank')
      await cdp.send('Target.closeTarget', { targetId: t.targetId });
}

function lastLines(s: string): string {
  return (
    s
      .trim()
      .split('\n')
      .filter((l) => !/dbus|Fontconfig/i.test(l))
      .slice(-3)
      .join(' ')
      .slice(0, 500) || 'no message'
  );
}
