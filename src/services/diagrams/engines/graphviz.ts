// Graphviz in the render thread: the WebAssembly build of @viz-js/viz (MIT), so no `dot` process
// is spawned per diagram. The WASM module has no file system: `image=` and `shapefile=` attributes
// cannot read server files.
import { DiagramError, lineOf } from './diagram-error.ts';

type Viz = Awaited<ReturnType<typeof import('@viz-js/viz').instance>>;
let viz: Promise<Viz> | undefined;

const LAYOUTS = new Set(['dot', 'neato', 'fdp', 'sfdp', 'circo', 'twopi', 'osage', 'patchwork']);

export async function warm(): Promise<void> {
  viz ??= import('@viz-js/viz').then((m) => m.instance());
  await viz;
}

export async function render(
  source: string,
  _format: string,
  options: Record<string, string>,
): Promise<string> {
  await warm();
  const v = await viz!;
  const engine = options['layout'] && LAYOUTS.has(options['layout']) ? options['layout'] : 'dot';
  const r = v.render(source, { format: 'svg', engine });
  if (r.status === 'success') return r.output;
  const msg = r.errors.map((e) => e.message.trim()).join('\n') || 'Graphviz could not lay out this graph';
  throw new DiagramError(msg, lineOf(msg));
}
