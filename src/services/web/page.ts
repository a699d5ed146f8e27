// The home page document: header with a section index, one section per utility, footer. Rendered
// per request (it shows the caller's address), fully readable without JavaScript.
import type { PublicUrls } from '../../infra/hosts.ts';
import { html } from './html.ts';
import { filesSection, imageSection, ipSection, telegramSection } from './sections-data.ts';
import { avatarSection, plantumlSection, proxySection, relaySection } from './sections-net.ts';

export const UTILITIES = [
  'files',
  'ip',
  'image',
  'telegram',
  'proxy',
  'plantuml',
  'avatar',
  'relay',
] as const;
export type Utility = (typeof UTILITIES)[number];

const TITLES: Record<Utility, string> = {
  files: 'Files',
  ip: 'IP',
  image: 'Images',
  telegram: 'Telegram',
  proxy: 'Proxy',
  plantuml: 'Diagrams',
  avatar: 'Avatars',
  relay: 'Relay',
};

export interface PageInput {
  urls: PublicUrls;
  enabled: Record<Utility, boolean>;
  clientIp: string;
  version: string;
  maxUploadBytes: number;
  proxy: { allow: readonly string[]; secret: boolean };
  relay: { port: number };
  /** Public paths of the hashed assets; null when they could not be built (the page still reads). */
  assets: { js: string; css: string; icon: string } | null;
}

export function renderPage(p: PageInput): string {
  const a = p.assets;
  const nav = UTILITIES.map((u) => html`<li><a href="#${u}">${TITLES[u]}</a></li>`);
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
<body data-base="${p.urls.base}" data-proxy="${p.proxy.secret ? `${p.urls.proxy}/t/<SECRET>` : p.urls.proxy}" data-plantuml="${p.urls.plantuml}" data-avatar="${p.urls.avatar}" data-allow="${p.proxy.allow.join(',')}">
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
<li><span>Proxy</span> <code>${p.urls.proxy}</code></li>
<li><span>PlantUML</span> <code>${p.urls.plantuml}</code></li>
<li><span>Avatars</span> <code>${p.urls.avatar}/avatar</code></li>
</ul>
<noscript><p class="note">The examples below work anywhere; the try-it tools on this page need JavaScript.</p></noscript>
<p class="small">Calls that use resources (uploads, images, messages, diagrams) are rate-limited per address. Meant for development and testing, not production.</p>
</section>
${filesSection(p)}
${ipSection(p)}
${imageSection(p)}
${telegramSection(p)}
${proxySection(p)}
${plantumlSection(p)}
${avatarSection(p)}
${relaySection(p)}
</main>
<footer class="wrap"><p>devutil ${p.version} · <a href="/docs">API docs</a> · <a href="/openapi.json">OpenAPI</a> · <a href="/healthz">health</a></p></footer>
</body>
</html>
`;
  return doc.value;
}

/**
 * The page's headers: scripts only from this origin (no inline script anywhere), never framed,
 * previews only from this origin. `data:` images cover the CSS icons.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "manifest-src 'self'",
].join('; ');
