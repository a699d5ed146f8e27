// BPMN 2.0 diagrams drawn by bpmn-js (bpmn.io) in a page of the headless-browser pool
// (browser-pool.ts), the same Chromium as the Mermaid types that need a browser: bpmn-js lays out its labels with the
// browser's text measurement, so it has no browserless path. The page loads bpmn-js's standalone
// viewer bundle (bundles.ts) once, imports each diagram's XML and exports it with saveSVG. bpmn-js's
// licence requires its bpmn.io watermark to stay visible wherever it draws: the viewer's own logo
// (its link to https://bpmn.io) is copied unchanged into every exported SVG, below the diagram so
// nothing overlaps it. The page's CSP lets it run its own bundle only and connect nowhere.
import { type BrowserPool, BrowserUnavailable } from './browser-pool.ts';
import { MAX_SVG } from './browser-settings.ts';
import { browserBundle } from './bundles.ts';
import { type PageKind, scriptPage } from './page-kind.ts';
import type { RenderReply } from './render-job.ts';

const ORIGIN = 'http://devutil-bpmn.invalid';

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>devutil bpmn</title>
<script src="/bpmn-viewer.js"></script></head><body><div id="canvas" style="width:1200px;height:900px"></div></body></html>`;

/** Runs in the page: defines the render function the pool calls. */
const SETUP = `(async () => {
  if (typeof BpmnJS === 'undefined') throw new Error('the bpmn-js bundle did not load');
  const message = (e) => String((e && e.message) || e).replace(/\\s+/g, ' ').slice(0, 2000);
  const lineOf = (text) => { const m = /line[: ]+(\\d+)/i.exec(text); return m ? Number(m[1]) : undefined; };
  globalThis.__devutilRender = async (source) => {
    const container = document.getElementById('canvas');
    const viewer = new BpmnJS({ container });
    try {
      let warnings = [];
      try {
        warnings = (await viewer.importXML(source)).warnings || [];
      } catch (e) {
        const m = message(e);
        return { ok: false, kind: 'syntax', message: 'bpmn: ' + m, line: lineOf(m) };
      }
      const shown = viewer.get('elementRegistry').getAll().length;
      if (shown <= 1) {
        const m = warnings.length ? message(warnings[0]) : 'the XML has no diagram to draw (no bpmndi:BPMNDiagram with shapes)';
        return { ok: false, kind: 'syntax', message: 'bpmn: ' + m, line: lineOf(m) };
      }
      const { svg } = await viewer.saveSVG();
      const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
      const root = doc.documentElement;
      const logo = container.querySelector('.bjs-powered-by svg');
      if (!logo) return { ok: false, kind: 'failed', message: 'the bpmn.io watermark is missing' };
      const [x, y, w, h] = (root.getAttribute('viewBox') || '0 0 0 0').split(/\\s+/).map(Number);
      const size = 40;
      const link = doc.createElementNS('http://www.w3.org/2000/svg', 'a');
      link.setAttribute('href', 'https://bpmn.io');
      const mark = doc.importNode(logo, true);
      mark.setAttribute('x', String(x + w - size));
      mark.setAttribute('y', String(y + h + 4));
      mark.setAttribute('width', String(size));
      mark.setAttribute('height', String(size * 0.4));
      link.appendChild(mark);
      root.appendChild(link);
      const grow = size * 0.4 + 8;
      root.setAttribute('viewBox', [x, y, w, h + grow].join(' '));
      const height = Number(root.getAttribute('height'));
      if (height) root.setAttribute('height', String(height + grow));
      const out = new XMLSerializer().serializeToString(root);
      if (out.length > ${MAX_SVG}) return { ok: false, kind: 'too-large', message: 'the diagram is too large' };
      return { ok: true, svg: out };
    } catch (e) {
      return { ok: false, kind: 'failed', message: message(e) };
    } finally {
      viewer.destroy();
      container.replaceChildren();
    }
  };
  return true;
})()`;

function page(path: string): PageKind {
  return scriptPage({
    name: 'bpmn',
    origin: ORIGIN,
    html: PAGE,
    setup: SETUP,
    scriptUrl: '/bpmn-viewer.js',
    scriptPath: path,
  });
}

export interface BpmnBrowser {
  readonly version: string;
  render(source: string): Promise<RenderReply>;
}

/** BPMN's pages in the server's browser pool; no browser starts before a diagram needs one. */
export function bpmnBrowser(pool: BrowserPool): BpmnBrowser {
  const bundle = browserBundle('bpmn');
  if (!bundle) {
    const err = new BrowserUnavailable(
      'the bpmn-js viewer bundle is missing: neither web/dist/vendor/ (npm run build:web) nor the bpmn-js package has it',
    );
    return { version: '', render: () => Promise.reject(err) };
  }
  const kind = page(bundle.path);
  return { version: bundle.version, render: (source) => pool.run(kind, source) };
}
