// Mermaid's own parser, without a browser: every Mermaid source is checked by it before anything
// draws it (beautiful-mermaid or the browser pool), so that what Mermaid rejects answers 400 with
// Mermaid's message and line, not a picture with the bad parts dropped. It runs in a render
// process (imported by mermaid.ts), never in the server: a stranger's source may make it spin or
// grow, and the process is bounded and killed for that. Parsing needs no DOM except DOMPurify,
// which label setters call; outside a browser DOMPurify has no hooks and no sanitize, so it gets
// inert ones (nothing parsed here is ever drawn or served).
import { DiagramError, lineOf } from './diagram-error.ts';

type Mermaid = typeof import('mermaid')['default'];
let mod: Promise<Mermaid | null> | undefined;

async function load(): Promise<Mermaid | null> {
  try {
    const purify = (await import('dompurify')).default as unknown as Record<string, unknown>;
    if (typeof purify['addHook'] !== 'function') {
      for (const k of ['addHook', 'removeHook', 'removeHooks', 'removeAllHooks']) purify[k] = () => {};
      purify['sanitize'] = (s: unknown) => String(s).replace(/</g, '&lt;');
    }
    const m = (await import('mermaid')).default;
    m.initialize({ startOnLoad: false, securityLevel: 'strict' });
    return m;
  } catch {
    // The optional package is not installed: beautiful-mermaid's own checks are all there is.
    return null;
  }
}

/** Loads Mermaid's parsers (with the engine, not inside the first render's deadline). */
export async function warmParser(): Promise<void> {
  mod ??= load();
  const m = await mod;
  await m?.parse('graph LR\n  a --> b').catch(() => {});
}

/** The line of the diagram declaration (its first line that is not blank, a comment or front matter). */
function declarationLine(source: string): number {
  const lines = source.split('\n');
  let i = 0;
  if (/^\uFEFF?\s*---\s*$/.test(lines[0] ?? '')) {
    const end = lines.findIndex((l, n) => n > 0 && /^---\s*$/.test(l));
    if (end > 0) i = end + 1;
  }
  for (; i < lines.length; i++) if (lines[i]!.trim() && !lines[i]!.trim().startsWith('%%')) return i + 1;
  return 1;
}

interface ParseFailure {
  message?: unknown;
  name?: unknown;
  hash?: { loc?: { first_line?: unknown }; line?: unknown };
}

/** Throws DiagramError (Mermaid's message and 1-based line) when Mermaid rejects `source`. */
export async function checkSyntax(source: string): Promise<void> {
  mod ??= load();
  const m = await mod;
  if (!m) return;
  try {
    await m.parse(source);
  } catch (err) {
    const e = (err ?? {}) as ParseFailure;
    // A jison parser that ran out of input names the line after the last one: the last one it is.
    const lines = source.split('\n').length;
    const message = String(e.message ?? err)
      .slice(0, 2000)
      .replace(/\b(on line )(\d+)/, (_m, on, n) => `${on}${Math.min(Number(n), lines)}`);
    // Jison parsers (flowchart, gantt...) say where in `hash`; langium ones (pie, gitGraph...) in
    // the message; "no diagram type detected" is about the declaration.
    const loc = e.hash?.loc?.first_line;
    const line =
      typeof loc === 'number'
        ? loc
        : typeof e.hash?.line === 'number'
          ? e.hash.line + 1
          : (lineOf(message) ?? (e.name === 'UnknownDiagramError' ? declarationLine(source) : undefined));
    throw new DiagramError(message, line);
  }
}
