// Mermaid's own renderer in a page of the server's browser pool (browser-pool.ts), for the Mermaid types beautiful-mermaid
// does not draw (gantt, pie, mindmap, timeline, gitGraph, journey, quadrant, sankey, requirement,
// C4, block, architecture, packet, kanban, radar...). The page loads Mermaid's standalone bundle
// (bundles.ts: the page build's copy, or the `mermaid` package where installed), once, and renders with securityLevel "strict": labels are
// sanitised (DOMPurify), click callbacks and javascript: links are off, and a %%{init}%% directive
// cannot change the security level or the size limits (Mermaid's "secure" keys). The page's CSP
// lets it run its own bundle only and connect nowhere.
import { type BrowserPool, BrowserUnavailable } from './browser-pool.ts';
import { MAX_SVG } from './browser-settings.ts';
import { browserBundle } from './bundles.ts';
import { type PageKind, scriptPage } from './page-kind.ts';
import type { RenderReply } from './render-job.ts';

export const MERMAID_ORIGIN = 'http://devutil-mermaid.invalid';

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>devutil mermaid</title>
<script src="/mermaid.min.js"></script></head><body></body></html>`;

/** Runs in the page: initialises Mermaid and defines the render function the pool calls. */
function setupScript(maxTextSize: number, maxOutput: number): string {
  return `(async () => {
  if (typeof mermaid === 'undefined') throw new Error('the Mermaid bundle did not load');
  mermaid.initialize({
    startOnLoad: false,
    securityLevel: 'strict',
    suppressErrorRendering: true,
    deterministicIds: true,
    maxTextSize: ${maxTextSize},
    htmlLabels: false,
    flowchart: { htmlLabels: false },
  });
  const message = (e) => String((e && e.message) || e).slice(0, 2000);
  const lineOf = (e) => {
    const h = e && e.hash;
    if (h && h.loc && typeof h.loc.first_line === 'number') return h.loc.first_line;
    if (h && typeof h.line === 'number') return h.line + 1;
    const m = /line[: ]+(\\d+)/i.exec(message(e));
    return m ? Number(m[1]) : undefined;
  };
  globalThis.__devutilRender = async (source) => {
    document.body.replaceChildren();
    try {
      await mermaid.parse(source);
    } catch (e) {
      return { ok: false, kind: 'syntax', message: message(e), line: lineOf(e) };
    }
    try {
      const { svg } = await mermaid.render('devutil-mermaid', source);
      if (svg.length > ${maxOutput}) return { ok: false, kind: 'failed', message: 'the diagram is too large' };
      return { ok: true, svg };
    } catch (e) {
      return { ok: false, kind: 'failed', message: message(e) };
    } finally {
      document.body.replaceChildren();
    }
  };
  return true;
})()`;
}

export function mermaidPage(bundle: string, o: { maxTextSize: number; maxOutput: number }): PageKind {
  // The bundle (3.5 MB) is read on the first page load, kept for the next ones.
  return scriptPage({
    name: 'mermaid',
    origin: MERMAID_ORIGIN,
    html: PAGE,
    setup: setupScript(o.maxTextSize, o.maxOutput),
    scriptUrl: '/mermaid.min.js',
    scriptPath: bundle,
  });
}

export interface MermaidBrowser {
  /** The version of Mermaid the pages run ('' when there is no bundle). */
  readonly version: string;
  render(source: string): Promise<RenderReply>;
}

/** Mermaid's pages in the server's browser pool; no browser starts before a diagram needs one. */
export function mermaidBrowser(pool: BrowserPool, o: { maxSource: number }): MermaidBrowser {
  const bundle = browserBundle('mermaid');
  if (!bundle) {
    const err = new BrowserUnavailable(
      'the Mermaid bundle is missing: neither web/dist/vendor/ (npm run build:web) nor the mermaid package has it',
    );
    return { version: '', render: () => Promise.reject(err) };
  }
  const kind = mermaidPage(bundle.path, { maxTextSize: o.maxSource, maxOutput: MAX_SVG });
  return { version: bundle.version, render: (source) => pool.run(kind, source) };
}
