// D2 (MPL-2.0, @terrastruct/d2): the Go compiler built to WebAssembly. The package runs it in a
// worker thread of its own, started once per render thread and reused.
import { DiagramError, lineOf } from './diagram-error.ts';

interface D2 {
  compile(
    input: string,
    options?: Record<string, unknown>,
  ): Promise<{ diagram: unknown; renderOptions: Record<string, unknown> }>;
  render(diagram: unknown, options?: Record<string, unknown>): Promise<string>;
}
let d2: Promise<D2> | undefined;

export async function warm(): Promise<void> {
  d2 ??= import('@terrastruct/d2').then(async (m) => {
    const engine = new m.D2();
    await engine.compile('a'); // loads the Go WebAssembly module in the package's worker
    return engine as unknown as D2;
  });
  await d2;
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
  let compiled: Awaited<ReturnType<D2['compile']>>;
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
