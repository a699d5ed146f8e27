// One memory-reducing collection of this process's JavaScript heap once the server has gone idle
// (issue 35: the idle process tree's weight). V8 grows its young generation under load (up to
// 64 MiB of semi-spaces on Node 26) and keeps it, and the old generation's free pages, while
// nothing runs: no allocation means no collection. A "last resort" collection (what V8 runs before
// it gives up on memory) collects everything it can, compacts, and shrinks the young generation to
// its initial size; the next burst grows it again as far as that burst's survivors need (under a
// caller-IP load to about 4 MiB, where start-up had left 26), unlike a smaller fixed young
// generation (--max-semi-space-size), which would cap every burst. Node has no API for it: the
// `gc` function V8 installs with --expose-gc is taken from a fresh vm context, with the flag set
// only while that context is made (the main context never gets a `gc` global).
//
// Idle means the event loop's utilization stayed under IDLE_UTILIZATION for every check of
// `idleMs`: whatever runs here (requests, the relay, a client's long download) counts, with no hook
// on any of them. One collection per idle spell, and only when the heap has grown by MIN_GROWTH
// since the last one; a busy check starts a new spell. The collection runs on the main thread: a
// request arriving during it waits for it.
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Event loop utilization (0-1) under which a check counts as idle: timers and gauges stay under it. */
export const IDLE_UTILIZATION = 0.02;

type GcFunction = (opts?: {
  type?: 'major' | 'minor';
  execution?: 'sync' | 'async';
  flavor?: string;
}) => void;

let gcFn: GcFunction | null | undefined;

/** V8's gc function, or null where this runtime does not give it (then nothing is collected). */
function gcFunction(): GcFunction | null {
  if (gcFn !== undefined) return gcFn;
  try {
    v8.setFlagsFromString('--expose-gc');
    const fn = runInNewContext('gc') as unknown;
    gcFn = typeof fn === 'function' ? (fn as GcFunction) : null;
  } catch {
    gcFn = null;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  return gcFn;
}

const OLD_V8 = Number(process.versions.v8.split('.')[0]) < 12;

/**
 * A collection runs only when the heap holds this much more than the last one left: a quiet spell
 * after a few light requests is not worth its CPU (50-90 ms on a busy 2-core machine).
 */
export const MIN_GROWTH = 4 * 2 ** 20;

export interface HeapShrink {
  /** The heap's committed bytes (every space) before and after. */
  before: number;
  after: number;
  ms: number;
  /** CPU the collection took (this process, every thread: V8 collects on helper threads too). */
  cpuMs: number;
}

/** Runs the memory-reducing collection now (synchronous: tens of milliseconds on a small heap). */
export function collectForIdle(): HeapShrink | null {
  const gc = gcFunction();
  if (!gc) return null;
  const before = v8.getHeapStatistics().total_heap_size;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  // Node 20's V8 (11) collects nothing when given these options: a plain full collection there.
  if (OLD_V8) gc();
  else gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const c = process.cpuUsage(c0);
  return {
    before,
    after: v8.getHeapStatistics().total_heap_size,
    ms: performance.now() - t0,
    cpuMs: (c.user + c.system) / 1000,
  };
}

/**
 * Decides from one utilization reading per check whether to collect now: after `checks` idle
 * readings in a row, once per idle spell.
 */
export class IdleSpell {
  private idleChecks = 0;
  private done = false;
  private readonly checks: number;
  constructor(checks: number) {
    this.checks = checks;
  }

  /** One check's event loop utilization (0-1); true: collect now. */
  next(utilization: number): boolean {
    if (utilization >= IDLE_UTILIZATION) {
      this.idleChecks = 0;
      this.done = false;
      return false;
    }
    if (this.done || ++this.idleChecks < this.checks) return false;
    this.done = true;
    return true;
  }
}

/**
 * Checks every `idleMs / 3` and collects once the loop has been idle for about `idleMs` (default
 * 10 s: at most one collection per quiet spell, so a short one costs little more than a long one).
 * The timer keeps no process alive.
 */
export function startIdleCollection(
  onCollect: (r: HeapShrink) => void = () => {},
  idleMs = 10_000,
): { stop(): void } {
  const spell = new IdleSpell(3);
  let last = performance.eventLoopUtilization();
  let left = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (!spell.next(busy) || v8.getHeapStatistics().total_heap_size < left + MIN_GROWTH) return;
    const r = collectForIdle();
    if (!r) return;
    left = r.after;
    onCollect(r);
    // The collection itself was loop time: the next reading starts after it.
    last = performance.eventLoopUtilization();
  }, idleMs / 3);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
