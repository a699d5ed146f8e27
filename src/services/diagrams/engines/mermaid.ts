// Mermaid without a browser: beautiful-mermaid (MIT) lays out flowcharts, sequence, class, state
// and ER diagrams (and xychart-beta) in pure JavaScript, with ELK for flowcharts. Every other
// Mermaid type needs Mermaid itself, which draws through a browser DOM: those go to the browser
// pool (mermaid-browser.ts; the renderer decides). Every source, whatever draws it, is first
// checked here by Mermaid's own parser (mermaid-parse.ts): the renderer asks for the check alone
// (option `check`) before it hands a diagram to the browser.
import { DiagramError, lineOf, UnsupportedDiagram } from './diagram-error.ts';
import { checkSyntax, warmParser } from './mermaid-parse.ts';
import { localOnly } from './svg-refs.ts';

type Renderer = typeof import('beautiful-mermaid');
let mod: Promise<Renderer> | undefined;

/** The diagram type a Mermaid source declares: its first word after front matter, comments and directives. */
export function mermaidType(source: string): string {
  let text = source.replace(/^\uFEFF/, '');
  const fm = /^\s*---\n[\s\S]*?\n---\s*\n/.exec(text);
  if (fm) text = text.slice(fm[0].length);
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('%%')) continue;
    return (/^[A-Za-z][\w-]*/.exec(line)?.[0] ?? line.slice(0, 30)).toLowerCase();
  }
  return '';
}

/** Types rendered without a browser. */
export const BROWSERLESS = new Set([
  'graph',
  'flowchart',
  'sequencediagram',
  'classdiagram',
  'statediagram',
  'statediagram-v2',
  'erdiagram',
  'xychart-beta',
]);

export async function warm(): Promise<void> {
  await warmParser();
  // ELK (the flowchart layout) builds itself on the first diagram: one is drawn here, so that it is
  // loaded with the engine, not inside the first render's deadline and memory allowance.
  mod ??= import('beautiful-mermaid').then(async (m) => {
    await m.renderMermaidSVG('graph LR\n  a --> b');
    return m;
  });
  await mod;
}

/** An empty answer to `check`: Mermaid parsed the source, the browser pool draws it. */
export async function render(
  source: string,
  _format: string,
  options: Record<string, string> = {},
): Promise<string> {
  await warm();
  await checkSyntax(source);
  if (options['check']) return '';
  const type = mermaidType(source);
  if (!BROWSERLESS.has(type))
    throw new UnsupportedDiagram(`Mermaid "${type.slice(0, 40)}" is drawn in a browser, not here`);
  const m = await mod!;
  try {
    // beautiful-mermaid imports its font from Google: the SVG falls back to the system's fonts.
    return localOnly(await m.renderMermaidSVG(source));
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
}
