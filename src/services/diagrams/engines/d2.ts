// D2 (MPL-2.0, @terrastruct/d2): the Go compiler built to WebAssembly. The package runs it in a
// worker thread of its own; here it runs on the render process's main thread, from the package's
// own files (the Go runtime's wasm_exec.js, d2.wasm, ELK's elk.js and setup.js), because the
// package's way holds it three times over: the module's 22 MB read on the main thread, copied
// into the worker's message, and the worker's whole Node environment (about 40 MiB of a loaded
// D2's 185 measured on Node 26). ELK (layout=elk) is loaded on the first diagram that asks for it:
// its 3.6 MB of script cost 40 MiB in every process that loaded D2. Nothing is lost in isolation:
// the render process is the boundary (killed at the deadline, under its memory bound), and a render
// blocks it the same way whether the Go code runs on this thread or the process waits on another.
// The process starts with --liftoff-only (render-child.ts), which skips V8's optimising of the
// module and its memory. A package whose files are laid out otherwise is run its own way.
import { existsSync, readFileSync } from 'node:fs';
import { DiagramError, lineOf } from './diagram-error.ts';

interface Compiled {
  diagram: unknown;
  renderOptions: Record<string, unknown>;
}
interface Engine {
  compile(source: string, options?: Record<string, unknown>): Promise<Compiled>;
  render(diagram: unknown, options?: Record<string, unknown>): Promise<string>;
}

/** The Go runtime of wasm_exec.js, as far as this uses it. */
interface GoRuntime {
  importObject: WebAssembly.Imports;
  exited: boolean;
  run(instance: WebAssembly.Instance): Promise<void>;
}

/** The functions D2's Go program puts on globalThis.d2 (JSON in, JSON out). */
interface GoD2 {
  compile(json: string): string | Promise<string>;
  render(json: string): string | Promise<string>;
}

let d2: Promise<Engine> | undefined;
/** Loads ELK into this thread (the package's own way loads it with the engine). */
let loadElk = (): void => {};

const run = (script: string) => new Function(script).call(globalThis);

/** The package's files beside its Node entry, or null when they are not where this expects them. */
function packageDir(): URL | null {
  try {
    const dir = new URL('./', import.meta.resolve('@terrastruct/d2'));
    const files = ['wasm_exec.js', 'd2.wasm', 'elk.js', 'setup.js'];
    return files.every((f) => existsSync(new URL(f, dir))) ? dir : null;
  } catch {
    return null;
  }
}

/** D2's Go program on this thread. A Go runtime that exited (a fatal error) answers no more. */
async function direct(dir: URL): Promise<Engine> {
  const g = globalThis as unknown as { Go?: new () => GoRuntime; d2?: GoD2; elkLayoutSync?: unknown };
  if (!g.Go) run(readFileSync(new URL('wasm_exec.js', dir), 'utf8'));
  // ELK on its first use: elk.js replaces this stand-in with its own elkLayoutSync. (render()
  // loads it ahead, outside the Go call, for a diagram that can ask for it: its layout algorithms
  // register on a timer, after which this is no longer called.)
  const lazyElk = function (this: unknown, ...args: unknown[]): unknown {
    loadElk();
    const real = g.elkLayoutSync;
    if (typeof real !== 'function' || real === lazyElk) throw new Error('ELK did not load');
    return real.apply(this, args);
  };
  let elk = false;
  loadElk = () => {
    if (elk) return;
    elk = true;
    run(readFileSync(new URL('elk.js', dir), 'utf8'));
    run(readFileSync(new URL('setup.js', dir), 'utf8'));
  };
  g.elkLayoutSync = lazyElk;
  const go = new g.Go!();
  // Compiled from the file's bytes, which are garbage once the module is made (compiled as the
  // file streams in, the process held 40 MiB more, measured on Node 26).
  const module = await WebAssembly.compile(readFileSync(new URL('d2.wasm', dir)));
  const instance = await WebAssembly.instantiate(module, go.importObject);
  void go.run(instance);
  const api = g.d2;
  if (!api) throw new Error('the D2 WebAssembly module did not start');
  const call = async (fn: 'compile' | 'render', arg: unknown) => {
    let text: string | undefined;
    let failure: unknown;
    try {
      text = await api[fn](JSON.stringify(arg));
    } catch (err) {
      failure = err;
    }
    // Go ended (a fatal error: out of memory, its stack): this process must not render again.
    if (go.exited) {
      d2 = undefined;
      throw new WebAssembly.RuntimeError('the D2 WebAssembly program exited');
    }
    if (failure) throw failure;
    const r = JSON.parse(String(text)) as { data?: unknown; error?: { message?: string } };
    if (r.error) throw new Error(r.error.message ?? 'D2 failed');
    return r.data;
  };
  return {
    compile: async (source, options = {}) =>
      (await call('compile', { fs: { index: source }, options })) as Compiled,
    render: async (diagram, options = {}) =>
      // The SVG comes back in base64 (UTF-8 inside).
      Buffer.from(String(await call('render', { diagram, options })), 'base64').toString('utf8'),
  };
}

export async function warm(): Promise<void> {
  d2 ??= (async () => {
    const dir = packageDir();
    if (dir) {
      const engine = await direct(dir);
      await engine.compile('a');
      return engine;
    }
    const { D2 } = await import('@terrastruct/d2');
    const engine = new D2() as unknown as Engine;
    await engine.compile('a'); // loads the Go WebAssembly module in the package's worker
    return engine;
  })();
  try {
    await d2;
  } catch (err) {
    d2 = undefined;
    throw err;
  }
}

export async function render(
  source: string,
  _format: string,
  options: Record<string, string>,
): Promise<string> {
  await warm();
  const engine = await d2!;
  const opts: Record<string, unknown> = {};
  if (options['theme'] && /^\d{1,3}$/.test(options['theme'])) opts['themeID'] = Number(options['theme']);
  if (options['sketch'] === 'true') opts['sketch'] = true;
  if (options['layout'] === 'elk' || options['layout'] === 'dagre') opts['layout'] = options['layout'];
  // Only a diagram whose options or source name ELK can be laid out by it (d2-config's
  // layout-engine, or ?layout=elk): ELK is loaded first, and
  // its algorithms registered (on a timer of its own) before Go asks for them.
  if (opts['layout'] === 'elk' || /elk/i.test(source)) {
    loadElk();
    await new Promise((r) => setTimeout(r, 1));
  }
  let compiled: Compiled;
  try {
    compiled = await engine.compile(source, opts);
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    // D2 reports "index.d2:3:5: ..." (line:column).
    const m = /:(\d+):\d+:/.exec(msg);
    throw new DiagramError(msg.replace(/^.*?index\.d2:/, 'line '), m ? Number(m[1]) : lineOf(msg));
  }
  return engine.render(compiled.diagram, { ...compiled.renderOptions, ...opts });
}
