// The home page document: header with a section index, one section per utility that defines one
// (services/<name>/page.ts, in the order of services/index.ts), footer. Fully readable without
// JavaScript; the caller's address is put in per request (index.ts).
import { html, type Raw } from '../../page/html.ts';
import type { PageInput, PageSection } from '../../page/section.ts';
import type { ServiceDef } from '../define.ts';
import { proxyPrefix } from '../proxy/clients.ts';

/** A utility's section of the page, by the utility's name. */
export interface Section {
  id: string;
  page: PageSection;
}

/** Loads the sections of the definitions that have one, in their order. */
export async function loadSections(services: readonly ServiceDef[]): Promise<Section[]> {
  const sections = await Promise.all(
    services.map(async (d) => (d.page ? [{ id: d.name, page: await d.page() }] : [])),
  );
  return sections.flat();
}

function section(p: PageInput, id: string, s: PageSection): Raw {
  const lead = typeof s.lead === 'string' ? s.lead : s.lead(p);
  return html`<section id="${id}" class="card" aria-labelledby="${id}-h">
<h2 id="${id}-h"><a href="#${id}" class="anchor">${s.title}</a></h2>
<p class="lead">${lead}</p>
${p.enabled.has(id) ? s.body(p) : html`<p class="off" role="note">This utility is not enabled on this server.</p>`}
</section>`;
}

export function renderPage(p: PageInput, pages: readonly Section[]): string {
  const a = p.assets;
  const nav = pages.map((s) => html`<li><a href="#${s.id}">${s.page.nav}</a></li>`);
  const hosts = p.services.flatMap((d) =>
    d.host
      ? [{ label: d.host.label, url: `${p.urls[d.name]}${d.host.urlsCarryMount ? d.host.mount : ''}` }]
      : [],
  );
  const proxy = p.config.proxy;
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>devutil: developer utilities</title>
<meta name="description" content="File storage, caller IP, random images, a Telegram relay, a GitHub/Debian/PyPI proxy, PlantUML, avatars and a Syncthing relay.">
${a ? html`<link rel="stylesheet" href="${a.css}"><link rel="icon" href="${a.icon}" type="image/svg+xml"><script type="module" src="${a.js}"></script>` : ''}
</head>
<body data-base="${p.urls.base}" data-proxy="${proxyPrefix(p)}" data-diagrams="${p.urls.diagrams}" data-avatar="${p.urls.avatar}" data-allow="${proxy.allow.join(',')}">
<a class="skip" href="#main">Skip to the utilities</a>
<header class="top"><div class="wrap">
<a class="brand" href="/" aria-label="devutil home">${a ? html`<img class="logo" src="${a.icon}" alt="" width="28" height="28">` : ''}devutil</a>
<nav aria-label="Utilities"><ul>${nav}</ul></nav>
<a class="docs" href="/docs">API docs</a>
</div></header>
<main id="main" class="wrap">
<section class="hero" aria-labelledby="hero-h">
<h1 id="hero-h">Developer utilities in one place</h1>
<p>Small HTTP tools for development and testing, handy on restrictive networks. Each one is explained below with examples you can copy, and you can try it right here. The full API reference is at <a href="/docs">/docs</a>.</p>
<ul class="urls">
<li><span>Base URL</span> <code>${p.urls.base}</code></li>
${hosts.map((h) => html`<li><span>${h.label}</span> <code>${h.url}</code></li>\n`)}</ul>
<noscript><p class="note">The examples below work anywhere; the try-it tools on this page need JavaScript.</p></noscript>
<p class="small">Calls that use resources (uploads, images, messages, diagrams) are rate-limited per address. One machine needs no configuration; running it for a team or in production (several instances on Redis and S3, restarts behind a load balancer) is described in docs/deployment.md and docs/operations.md.</p>
</section>
${pages.map((s) => html`${section(p, s.id, s.page)}\n`)}</main>
<footer class="wrap"><p>devutil ${p.version} · <a href="/docs">API docs</a> · <a href="/openapi.json">OpenAPI</a> · <a href="/healthz">health</a></p></footer>
</body>
</html>
`;
  return doc.value;
}

/** The origins the enabled sections of the page read from. */
export function pageConnect(p: PageInput, pages: readonly Section[]): string[] {
  return pages.flatMap((s) => (s.page.connect && p.enabled.has(s.id) ? s.page.connect(p) : []));
}
