// Graphviz in the render thread: the WebAssembly build of @viz-js/viz (MIT), so no `dot` process
// is spawned per diagram. The WASM module has no file system: `image=` and `shapefile=` attributes
// cannot read server files.
// Graphviz's WebAssembly builds (viz-js and @hpcc-js/wasm-graphviz alike, Graphviz 16.1) leave state
// behind that can make a later layout trap (`table index is out of bounds`; Kroki's "unix" example
// after any other graph, hpcc-js-wasm#389). A trapped instance is dropped and the diagram laid out
// once more on a fresh one (about 130 ms), which starts from the state a first render sees.
import { DiagramError, lineOf } from './diagram-error.ts';

type Viz = Awaited<ReturnType<typeof import('@viz-js/viz').instance>>;
let viz: Promise<Viz> | undefined;

const LAYOUTS = new Set(['dot', 'neato', 'fdp', 'sfdp', 'circo', 'twopi', 'osage', 'patchwork']);

export async function warm(): Promise<void> {
  viz ??= import('@viz-js/viz').then((m) => m.instance());
  await viz;
}

async function layout(source: string, engine: string) {
  await warm();
  return (await viz!).render(source, { format: 'svg', engine });
}

export async function render(
  source: string,
  _format: string,
  options: Record<string, string>,
): Promise<string> {
  const engine = options['layout'] && LAYOUTS.has(options['layout']) ? options['layout'] : 'dot';
  let r: Awaited<ReturnType<typeof layout>>;
  try {
    r = await layout(source, engine);
  } catch (err) {
    if (!(err instanceof WebAssembly.RuntimeError)) throw err;
    viz = undefined;
    r = await layout(source, engine).catch((again: unknown) => {
      viz = undefined; // not kept if it traps too
      throw again;
    });
  }
  if (r.status === 'success') return r.output;
  const msg = r.errors.map((e) => e.message.trim()).join('\n') || 'Graphviz could not lay out this graph';
  throw new DiagramError(msg, lineOf(msg));
}
