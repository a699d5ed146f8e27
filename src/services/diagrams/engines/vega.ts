// Vega and Vega-Lite (BSD-3-Clause): the spec is compiled (Vega-Lite to Vega), parsed and rendered
// to SVG by a headless View (renderer "none": no canvas). Data may not be loaded from URLs or files:
// the loader refuses every fetch, so a spec cannot make the server reach out. A mark's `href` is
// never fetched, only sanitized (http, https and mailto pass, any other is dropped): Vega's SVG
// renderer dereferences what a failed sanitize leaves in a promise nobody awaits, which used to end
// the render thread (the headless renderer resolves links after writing the SVG, so it has none).
import { DiagramError, lineOf } from './diagram-error.ts';

type VegaMod = typeof import('vega');
/** Links a mark may carry. */
const LINK = /^(?:https?:\/\/|mailto:)[^\s]*$/i;
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

export async function warm(): Promise<void> {
  vega ??= import('vega');
  lite ??= import('vega-lite');
  await Promise.all([vega, lite]);
}

export async function render(
  source: string,
  _format: string,
  options: Record<string, string>,
): Promise<string> {
  await warm();
  const v = await vega!;
  let spec = parseSpec(source);
  if (options['lite'] === 'true') {
    lite ??= import('vega-lite');
    try {
      spec = (await lite).compile(spec as never).spec as unknown as Record<string, unknown>;
    } catch (err) {
      throw new DiagramError(err instanceof Error ? err.message : String(err));
    }
  }
  // Vega logs a failed data load and draws without the data: remember the attempt and refuse.
  let reached = false;
  const loader = v.loader();
  const refuse = async () => {
    reached = true;
    throw new Error('refused');
  };
  loader.load = refuse;
  loader.sanitize = async (uri: string, opt?: { context?: string }) => {
    if (opt?.context !== 'href') return refuse();
    // null is what Vega's own sanitizer leaves for a link it refuses (the attribute is left out).
    const href = typeof uri === 'string' && LINK.test(uri.trim()) ? uri.trim() : null;
    return { href } as { href: string };
  };
  let svg: string;
  try {
    const view = new v.View(v.parse(spec as never), { renderer: 'none', loader, logLevel: v.None });
    svg = await view.toSVG();
    view.finalize();
  } catch (err) {
    throw new DiagramError(err instanceof Error ? err.message : String(err));
  }
  if (reached)
    throw new DiagramError('loading data from a URL or file is not allowed here: put the data in the spec');
  return svg;
}
