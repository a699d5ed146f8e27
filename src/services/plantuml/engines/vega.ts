// Vega and Vega-Lite (BSD-3-Clause): the spec is compiled (Vega-Lite to Vega), parsed and rendered
// to SVG by a headless View (renderer "none": no canvas). Data may not be loaded from URLs or files:
// the loader refuses every fetch, so a spec cannot make the server reach out.
import { DiagramError, lineOf } from './diagram-error.ts';

type VegaMod = typeof import('vega');
let vega: Promise<VegaMod> | undefined;
let lite: Promise<typeof import('vega-lite')> | undefined;

function parseSpec(source: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(source);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
  throw new DiagramError('expected a JSON object');
}

export async function render(
  source: string,
  _format: string,
  options: Record<string, string>,
): Promise<string> {
  vega ??= import('vega');
  const v = await vega;
  let spec = parseSpec(source);
  if (options['lite'] === 'true') {
    lite ??= import('vega-lite');
    try {
      spec = (await lite).compile(spec as never).spec as unknown as Record<string, unknown>;
    } catch (err) {
      throw new DiagramError(err instanceof Error ? err.message : String(err));
    }
  }
  const loader = v.loader();
  const refuse = async () => {
    throw new Error('loading data from a URL or file is not allowed here');
  };
  loader.load = refuse;
  loader.sanitize = refuse;
  try {
    const view = new v.View(v.parse(spec as never), { renderer: 'none', loader });
    const svg = await view.toSVG();
    view.finalize();
    return svg;
  } catch (err) {
    throw new DiagramError(err instanceof Error ? err.message : String(err));
  }
}
