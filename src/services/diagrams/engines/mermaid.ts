// Mermaid without a browser: beautiful-mermaid (MIT) lays out flowcharts, sequence, class, state
// and ER diagrams (and xychart-beta) in pure JavaScript, with ELK for flowcharts. Every other
// Mermaid type needs Mermaid itself, which draws through a browser DOM: those go to the browser
// pool when an operator turned it on (mermaid-browser.ts; the renderer decides before a thread is
// asked), else they are refused here with a 422 naming the type and the setting.
import { DiagramError, lineOf, UnsupportedDiagram } from './diagram-error.ts';

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
  // ELK (the flowchart layout) builds itself on the first diagram: one is drawn here, so that it is
  // loaded with the engine, not inside the first render's deadline and memory allowance.
  mod ??= import('beautiful-mermaid').then(async (m) => {
    await m.renderMermaidSVG('graph LR\n  a --> b');
    return m;
  });
  await mod;
}

export async function render(source: string): Promise<string> {
  const type = mermaidType(source);
  if (!BROWSERLESS.has(type))
    throw new UnsupportedDiagram(
      `Mermaid ${type ? `"${type.slice(0, 40)}"` : 'without a diagram type'} is not rendered here: this server draws Mermaid flowchart, sequenceDiagram, classDiagram, stateDiagram, erDiagram and xychart-beta without a browser; other Mermaid types need one, which the operator turns on with DEVUTIL_DIAGRAMS_MERMAID_CHROMIUM (the path of a Chromium)`,
    );
  await warm();
  const m = await mod!;
  try {
    return await m.renderMermaidSVG(source);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
}
