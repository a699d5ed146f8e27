// D2 (MPL-2.0, @terrastruct/d2): the Go compiler built to WebAssembly, which the package runs in a
// worker thread of the render process. It needs no process of its own any more: the render process
// is killed at a deadline or on shutdown, so V8's long background optimising of the 22 MB module
// (which held a server's exit up while D2 ran inside it) can hold nothing up, and the process
// starts with --liftoff-only (render-child.ts), which skips that optimising and its memory.
import { DiagramError, lineOf } from './diagram-error.ts';

interface Compiled {
  diagram: unknown;
  renderOptions: Record<string, unknown>;
}
interface Engine {
  compile(source: string, options?: Record<string, unknown>): Promise<Compiled>;
  render(diagram: unknown, options?: Record<string, unknown>): Promise<string>;
}

let d2: Promise<Engine> | undefined;

export async function warm(): Promise<void> {
  d2 ??= (async () => {
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
  let compiled: Compiled;
  try {
    compiled = await engine.compile(source, opts);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // D2 reports "index.d2:3:5: ..." (line:column).
    const m = /:(\d+):\d+:/.exec(msg);
    throw new DiagramError(msg.replace(/^.*?index\.d2:/, 'line '), m ? Number(m[1]) : lineOf(msg));
  }
  return engine.render(compiled.diagram, { ...compiled.renderOptions, ...opts });
}
