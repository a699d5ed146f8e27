// The small web editor at /uml/{encoded} (the server's JSP page): a textarea, the rendered SVG and
// the links editors paste. A POST of the form field `text` answers 302 to /uml/<encoded>.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../../context.ts';
import { DIAGRAM_MEMOS } from '../memos.ts';
import { encodeDiagram } from './encoding.ts';
import type { PlantumlHandlers } from './routes.ts';

const DEFAULT = 'Bob -> Alice : hello';

function esc(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

export function editorPage(base: string, text: string, index: number): string {
  const enc = encodeDiagram(text);
  const page = index > 0 ? `${index}/` : '';
  const link = (f: string) => `${base}/${f}/${page}${enc}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PlantUML editor · devutil</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;margin:1rem auto;max-width:72rem;padding:0 1rem}
textarea{width:100%;height:16rem;font-family:ui-monospace,monospace}img{max-width:100%;border:1px solid #ddd}
nav a{margin-right:1rem}code{word-break:break-all}</style></head>
<body><h1>PlantUML</h1>
<form method="post" action="${esc(base)}/form"><textarea name="text" spellcheck="false">${esc(text)}</textarea>
<p><button type="submit">Render</button></p></form>
<nav><a href="${esc(link('png'))}">PNG</a><a href="${esc(link('svg'))}">SVG</a><a href="${esc(link('txt'))}">ASCII art</a><a href="${esc(link('map'))}">Map</a></nav>
<p><code>${esc(link('svg'))}</code></p>
<p><img src="${esc(link('svg'))}" alt="diagram"></p>
</body></html>`;
}

/** `handlers` (routes.ts) brings the decoder on the first request of an encoded page. */
export async function editorRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  handlers: PlantumlHandlers,
): Promise<void> {
  const cfg = ctx.config.diagrams;
  const base = ctx.urls.diagrams;
  const { decoded } = ctx.local(DIAGRAM_MEMOS);
  const page = (summary: string) => ({ summary, tags: ['diagrams'] });
  const show = (text: string, index = 0) => editorPage(base, text, index);
  type Q = { Querystring: { text?: string } };

  for (const path of ['/plantuml', '/plantuml/', '/plantuml/uml', '/plantuml/form']) {
    const schema = page(
      `Web editor page (plantuml-server's ${path.replace('/plantuml', '') || '/'}); ?text= prefills it`,
    );
    app.get<Q>(path, { schema }, async (req, reply) => {
      const text = typeof req.query.text === 'string' ? req.query.text.slice(0, cfg.maxSourceBytes) : DEFAULT;
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(show(text));
    });
  }
  const encodedDoc = page('Web editor page showing an encoded diagram');
  app.get<{ Params: { encoded: string } }>(
    '/plantuml/uml/:encoded',
    { schema: encodedDoc },
    async (req, reply) => {
      const { decodeOrThrow } = await handlers.get();
      const text = decodeOrThrow(decoded, req.params.encoded, cfg.maxSourceBytes);
      return reply.type('text/html; charset=utf-8').send(show(text));
    },
  );
  app.get<{ Params: { index: string; encoded: string } }>(
    '/plantuml/uml/:index/:encoded',
    { schema: page('Web editor page showing image number index of an encoded diagram') },
    async (req, reply) => {
      const idx = /^\d{1,4}$/.test(req.params.index) ? Number(req.params.index) : 0;
      const { decodeOrThrow } = await handlers.get();
      const text = decodeOrThrow(decoded, req.params.encoded, cfg.maxSourceBytes);
      return reply.type('text/html; charset=utf-8').send(show(text, idx));
    },
  );
  const formDoc = page('Editor form submit (text=...): redirects to /uml/<encoded>');
  app.post('/plantuml/form', { schema: formDoc }, async (req, reply) => {
    const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    const text = new URLSearchParams(raw).get('text') ?? DEFAULT;
    return reply.redirect(`${base}/uml/${encodeDiagram(text)}`, 302);
  });
}
