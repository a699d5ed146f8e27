// The Caller IP section of the home page: examples built from the configured public URLs, the
// caller's address (spliced in per request), its details and, when single-stack host names are
// configured (ip.v4Url, ip.v6Url), both of the visitor's addresses (filled in by web/src/ip.ts).
import { example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';

const FACTS: [string, string][] = [
  ['scope', 'Kind'],
  ['country', 'Country'],
  ['asn', 'Network'],
  ['org', 'Organisation'],
];
/** Shown only when the answer has them (a city database is installed: ip.cityDb). */
const CITY_FACTS: [string, string][] = [
  ['city', 'City'],
  ['timezone', 'Timezone'],
];

export const ipPage: PageSection = {
  nav: 'IP',
  title: 'Caller IP',
  lead: 'Returns the public address your requests come from, as JSON or as plain text for scripts, with its country and network on request.',
  connect(p) {
    return [p.config.ip.v4Url, p.config.ip.v6Url].filter((u) => u !== '');
  },
  body(p) {
    const b = p.urls.base;
    const { v4Url, v6Url } = p.config.ip;
    const stacks: [string, string, string][] = [
      ['v4', 'IPv4', v4Url],
      ['v6', 'IPv6', v6Url],
    ];
    return html`<div class="split"><div class="examples">
${example('JSON', `curl ${b}/rest/api/v1/ip`)}
${example('Plain text, for scripts', `curl '${b}/api/ip?format=text'`)}
${example('With country and network', `curl '${b}/rest/api/v1/ip?details=1'`)}
${example('Is port 22 of my address open?', `curl ${b}/rest/api/v1/ip/port/22`)}
</div>
<div class="tool"><p class="big">Your address: <strong id="ip-value">${p.clientIp}</strong></p>
<dl class="facts" id="ip-details" aria-live="polite" hidden>${FACTS.map(([k, label]) => html`<div><dt>${label}</dt><dd id="ip-${k}">–</dd></div>`)}${CITY_FACTS.map(([k, label]) => html`<div id="ip-${k}-row" hidden><dt>${label}</dt><dd id="ip-${k}">–</dd></div>`)}</dl>
${stacks.map(([id, label, url]) => (url ? html`<p class="stack" id="ip-${id}-row" hidden>${label}: <strong id="ip-${id}" data-url="${url}">checking…</strong></p>\n` : ''))}<div class="actions"><button type="button" id="ip-refresh" disabled data-needs-js>Check again</button></div>
<p class="status" id="ip-status" role="status"></p>
<p class="small">Country and network data: <a href="https://db-ip.com">IP Geolocation by DB-IP</a>, RouteViews and NRO (CC BY 4.0), via ip-location-db.</p></div></div>`;
  },
};
