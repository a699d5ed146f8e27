// Entry of a diagram render process (process-pool.ts starts it): the JavaScript and WebAssembly
// engines run here, never in the server process, because V8 ends the whole *process* on some
// out-of-memory paths (a heap past its limit that garbage collection cannot bring back, an array
// or string past V8's maximum length), and a worker thread's resourceLimits do not contain those:
// one 93-byte Vega spec took the server down. A process's heap (--max-old-space-size), its
// committed memory (RLIMIT_DATA) and its CPU (killed at the render deadline) are bounded by V8 and
// the kernel, and running out ends only this process.
//
// Plain JavaScript, so that it starts on Node 20 too, which runs TypeScript only once tsx is
// registered (Node 24/26 strip types themselves; the test runner's compiled copy of the tree,
// scripts/test-compile.js, needs neither). Each engine module (./<name>.ts) is imported on
// its first job and exports warm() (loads its package and WebAssembly; the process says "started"
// once it has, so the render deadline does not count a cold start) and render(source, format,
// options) -> string | Uint8Array; what it throws is mapped by name (diagram-error.ts): the
// source's mistake (400), a type this engine does not draw (422), a result too large (413), and
// anything else is the engine failing (422).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import module from 'node:module';

module.enableCompileCache?.();
// If the machine itself runs short, the kernel's out-of-memory killer takes a render process first.
try {
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {}
if (!process.features.typescript && !existsSync(new URL('../../../../.devutil-compiled', import.meta.url))) {
  const { register } = await import('tsx/esm/api');
  register();
}

/** Largest answer sent back (a bigger one is refused here, before it crosses the channel). */
const MAX_OUTPUT = Number(process.env.DEVUTIL_RENDER_MAX_OUTPUT) || 32 * 1024 * 1024;
/** Memory one render may add to the process (bytes); 0 = no kernel bound. */
const ALLOWANCE = Number(process.env.DEVUTIL_RENDER_MEMORY) || 0;
const engines = new Map();
const loaded = new Set();
/** Committed memory when the bound was last set, and the bound. */
let boundAt = 0;
let limit = 0;
/** The job being rendered: an error no engine caught is its failure. */
let current = 0;

// The server went away (shutdown, or it was killed): nothing here is worth a clean exit.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));

function send(msg) {
  if (process.connected) process.send(msg);
}

const KINDS = { DiagramError: 'syntax', UnsupportedDiagram: 'unsupported', DiagramTooLarge: 'too-large' };

/** A WebAssembly engine that ran out of memory or trapped (Emscripten's abort). */
const WASM_DOWN = /Aborted\(|Cannot enlarge memory|out of memory|\bOOM\b/i;

function failed(err) {
  const e = err instanceof Error ? err : new Error(String(err));
  const kind = KINDS[e.name] ?? 'failed';
  const reply = { ok: false, kind, message: String(e.message).slice(0, 2000) };
  if (typeof e.line === 'number') reply.line = e.line;
  // An aborted WebAssembly instance answers every later call with the same abort: this process
  // must not render again (the pool retires it), and running out of memory is said as such.
  if (kind === 'failed' && (e instanceof WebAssembly.RuntimeError || WASM_DOWN.test(e.message))) {
    reply.retire = true;
    if (WASM_DOWN.test(e.message)) reply.memory = true;
  }
  return reply;
}

// An engine that rejects a promise nobody awaits, or throws from a callback, fails the render it
// belongs to; the process (and its warm engines) goes on. Node's default would exit.
process.on('unhandledRejection', (err) => {
  if (current) send({ seq: current, reply: failed(err) });
  current = 0;
});
process.on('uncaughtException', (err) => {
  if (current) send({ seq: current, reply: failed(err) });
  current = 0;
});

/** VmData (committed private writable memory) and VmRSS of this process, in bytes. */
function usage() {
  try {
    const st = readFileSync('/proc/self/status', 'latin1');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(st)?.[1] ?? 0) * 1024;
    return { data: kb('VmData'), rss: kb('VmRSS') };
  } catch {
    return { data: 0, rss: 0 };
  }
}

/** Sets this process's soft RLIMIT_DATA (util-linux prlimit on its own pid; it may raise it again). */
function setLimit(value) {
  const r = spawnSync('prlimit', ['--pid', String(process.pid), `--data=${value}:`], {
    stdio: 'ignore',
    timeout: 10_000,
  });
  return !r.error && r.status === 0;
}

/**
 * The kernel's bound (RLIMIT_DATA) is what the engines hold plus what one render may add. What the
 * engines hold differs a lot between runtimes (Node 26 maps half a GiB of code space, writable and
 * unused, per isolate, which RLIMIT_DATA counts) and grows as engines load, so the process sets it
 * on itself before a render: when none is set (an engine was loaded since), or the base has moved
 * by a quarter of the allowance: up with garbage the heap kept, down after the idle collection gave
 * memory back (else the next render could add the allowance and what was given back).
 */
function bound() {
  const u = usage();
  if (!ALLOWANCE || !u.data || (limit && Math.abs(u.data - boundAt) < ALLOWANCE / 4)) return u;
  if (setLimit(u.data + ALLOWANCE)) {
    boundAt = u.data;
    limit = u.data + ALLOWANCE;
  }
  return u;
}

/** Loads happen one at a time, never during a render's bound. */
let loading = Promise.resolve();

/**
 * Loads and warms the engines of `names` not loaded yet, with the bound lifted: loading is the
 * server's own work (a new engine, or a worker thread it starts, needs more than a render's
 * allowance), and a render sets the bound again. `strict`: a failure is thrown, not skipped.
 */
function ensure(names, strict) {
  const run = loading.then(async () => {
    const missing = names.filter((n) => !loaded.has(n));
    if (missing.length === 0) return;
    if (limit && setLimit('unlimited')) limit = 0;
    for (const name of missing) {
      try {
        const mod = await load(name);
        if (mod.warm) await mod.warm();
        loaded.add(name);
      } catch (err) {
        if (strict) throw err;
      }
    }
    flushCache();
  });
  loading = run.catch(() => {});
  return run;
}

/**
 * Writes what this process compiled to the compile cache now: Node writes it at a clean exit, and a
 * render process never has one (it is killed). Without it every new process type-stripped the
 * engine modules again, loading Node's stripper (12 MiB of heap and WebAssembly memory that stay),
 * and compiled every engine package from scratch.
 */
function flushCache() {
  try {
    module.flushCompileCache?.();
  } catch {}
}

function load(name) {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`bad engine name ${name}`);
  let m = engines.get(name);
  if (!m) {
    m = import(`./${name}.ts`);
    engines.set(name, m);
  }
  return m;
}

process.on('message', async ({ seq, job, warm }) => {
  if (warm) {
    // A fresh process: load what the pool has been using, then say so.
    await ensure(warm, false);
    send({ seq, warmed: true });
    return;
  }
  current = seq;
  let reply;
  try {
    await ensure([job.engine], true);
    const mod = await load(job.engine);
    // The parent watches memory from here: this render may add ALLOWANCE to what is resident now,
    // and a process at its kernel bound is killed at once (V8 spends seconds collecting garbage
    // before it gives up on an allocation the kernel refused).
    send({ seq, started: true, rss: bound().rss, limit });
    const body = await mod.render(job.source, job.format, job.options);
    const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    reply =
      size > MAX_OUTPUT
        ? {
            ok: false,
            kind: 'too-large',
            message: `the diagram is ${size} bytes, more than the ${MAX_OUTPUT} bytes an answer may have`,
          }
        : { ok: true, body };
  } catch (err) {
    reply = failed(err);
  }
  // Already answered (an error escaped the engine meanwhile): the late result goes nowhere.
  if (current !== seq) return;
  current = 0;
  send({ seq, reply });
});
// Once idle, the heap is collected (once per idle spell; process-pool.ts says why and what it saves),
// by the server's own mechanism; the pool hears what it gave back.
const COLLECT_IDLE_MS = Number(process.env.DEVUTIL_RENDER_COLLECT_IDLE_MS) || 0;
if (COLLECT_IDLE_MS > 0) {
  const { startIdleCollection } = await import('../../../infra/process/idle-gc.ts');
  startIdleCollection(
    (r) => send({ collected: { before: r.before, after: r.after, cpuMs: Math.round(r.cpuMs) } }),
    COLLECT_IDLE_MS,
  );
}
send({ ready: true });
