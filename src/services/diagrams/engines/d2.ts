// D2 (MPL-2.0, @terrastruct/d2): the Go compiler built to WebAssembly, run in a child process of
// its own (d2-process.js says why), started once per render thread and reused. A child that dies is
// started again on the next render.
import { type ChildProcess, fork } from 'node:child_process';
import { DiagramError, lineOf } from './diagram-error.ts';

interface Compiled {
  diagram: unknown;
  renderOptions: Record<string, unknown>;
}
type Answer = { id: number; ok: true; out: unknown } | { id: number; ok: false; message: string };

class D2Process {
  private readonly child: ChildProcess;
  private readonly calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private seq = 0;
  private gone: Error | null = null;
  readonly ready: Promise<void>;

  constructor(onExit: () => void) {
    this.child = fork(new URL('./d2-process.js', import.meta.url), [], {
      // Liftoff only: V8's baseline code for the 22 MB module, never re-optimised in the background.
      // Measured on one render thread's child (docs/diagrams.md): about 210 MiB instead of 460-680,
      // a faster load and first render; a steady render up to 20 % slower on Node 26, faster on
      // Node 20 (where the optimising competed with it).
      execArgv: [...process.execArgv, '--liftoff-only'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.once('message', () => resolve());
      this.child.once('exit', () => reject(new Error('the D2 process exited while starting')));
    });
    this.child.on('message', (m: Answer | { ready: true }) => {
      if (!('id' in m)) return;
      const call = this.calls.get(m.id);
      this.calls.delete(m.id);
      if (m.ok) call?.resolve(m.out);
      else call?.reject(Object.assign(new Error(m.message), { fromD2: true }));
    });
    // A failed spawn or send: the render fails (422) and the exit below, if any, resets the engine.
    this.child.on('error', (err) => {
      this.gone ??= err;
      for (const c of this.calls.values()) c.reject(err);
      this.calls.clear();
    });
    this.child.on('exit', (code, signal) => {
      this.gone = new Error(`the D2 process exited (${signal ?? code})`);
      for (const c of this.calls.values()) c.reject(this.gone);
      this.calls.clear();
      onExit();
    });
  }

  call<T>(op: 'compile' | 'render', ...args: unknown[]): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, op, args });
    });
  }
}

let d2: Promise<D2Process> | undefined;

export async function warm(): Promise<void> {
  d2 ??= (async () => {
    const p = new D2Process(() => {
      d2 = undefined;
    });
    await p.ready;
    await p.call('compile', 'a'); // loads the Go WebAssembly module in the package's worker
    return p;
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
  let compiled: Compiled;
  try {
    compiled = await engine.call<Compiled>('compile', source, opts);
  } catch (err) {
    if (!(err as { fromD2?: boolean }).fromD2) throw err; // the process failed, not the source
    const msg = (err as Error).message;
    // D2 reports "index.d2:3:5: ..." (line:column).
    const m = /:(\d+):\d+:/.exec(msg);
    throw new DiagramError(msg.replace(/^.*?index\.d2:/, 'line '), m ? Number(m[1]) : lineOf(msg));
  }
  return engine.call<string>('render', compiled.diagram, { ...compiled.renderOptions, ...opts });
}
