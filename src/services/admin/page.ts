// The admin page: a shell with the sign-in form and an empty dashboard the page script fills from
// GET /rest/api/v1/admin/stats. It carries no figures itself, so it is served without the token.
// With single sign-on (oidc.ts) it is served to signed-in operators only, names them, has no token
// form, and its script reads the figures with the session cookie; Sign out posts /admin/logout.
import { html } from '../../page/html.ts';

export interface AdminPageInput {
  version: string;
  assets: { js: string; css: string; icon: string } | null;
  /** The operator signed in through single sign-on (e-mail or subject), or absent. */
  signedIn?: string;
}

export function renderAdminPage(p: AdminPageInput): string {
  const a = p.assets;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>devutil: admin</title>
${a ? html`<link rel="stylesheet" href="${a.css}"><link rel="icon" href="${a.icon}" type="image/svg+xml"><script type="module" src="${a.js}"></script>` : ''}
</head>
<body data-page="admin"${p.signedIn === undefined ? '' : html` data-session="oidc"`}>
<a class="skip" href="#main">Skip to the dashboard</a>
<header class="top"><div class="wrap">
<a class="brand" href="/" aria-label="devutil home">${a ? html`<img class="logo" src="${a.icon}" alt="" width="28" height="28">` : ''}devutil</a>
<nav aria-label="Dashboard"><ul><li><a href="#traffic">Traffic</a></li><li><a href="#clients">Clients</a></li><li><a href="#proxied">Proxied</a></li><li><a href="#resources">Resources</a></li></ul></nav>
${
  p.signedIn === undefined
    ? html`<button type="button" id="admin-signout" class="secondary" hidden>Sign out</button>`
    : html`<form method="post" action="/admin/logout" class="admin-logout"><span class="small">${p.signedIn}</span> <button type="submit" id="admin-signout" class="secondary">Sign out</button></form>`
}
</div></header>
<main id="main" class="wrap admin">
<h1>Operator dashboard</h1>
<noscript><p class="note">The dashboard needs JavaScript: its figures come from GET /rest/api/v1/admin/stats with the admin token.</p></noscript>
<section id="admin-login" class="card" aria-labelledby="admin-login-h"${p.signedIn === undefined ? '' : html` hidden`}>
<h2 id="admin-login-h">Sign in</h2>
<form id="admin-login-form" method="post" action="/admin" autocomplete="off">
<div class="field"><label for="admin-token">Admin token (DEVUTIL_ADMIN_TOKEN)</label>
<input id="admin-token" name="token" type="password" required autocomplete="off" spellcheck="false"></div>
<button type="submit" data-needs-js disabled>Show the dashboard</button>
<p id="admin-login-status" class="status" role="status"></p>
</form>
<p class="small">The token stays in this tab's session storage and is sent only as an Authorization header to this server.</p>
</section>
<div id="admin-dash" hidden>
<div class="admin-bar">
<div role="group" aria-label="Time window" class="segmented"><button type="button" data-window="hour" aria-pressed="true">Last hour</button><button type="button" data-window="day" aria-pressed="false">Last day</button></div>
<p id="admin-status" class="status small" role="status"></p>
</div>
<section id="traffic" class="card" aria-labelledby="traffic-h"><h2 id="traffic-h">Traffic</h2><div id="admin-traffic"></div></section>
<section id="clients" class="card" aria-labelledby="clients-h"><h2 id="clients-h">Top clients</h2><div id="admin-clients" class="grid-wide"></div></section>
<section id="proxied" class="card" aria-labelledby="proxied-h"><h2 id="proxied-h">Top proxied</h2><div id="admin-proxied"></div></section>
<section id="resources" class="card" aria-labelledby="resources-h"><h2 id="resources-h">Caches, relay, queues and budgets</h2><div id="admin-resources" class="grid-wide"></div></section>
</div>
</main>
<footer class="wrap"><p>devutil ${p.version} · <a href="/">home</a> · <a href="/docs">API docs</a></p></footer>
</body>
</html>
`.value;
}
