// The Caller IP section of the home page: examples built from the configured public URLs.
import { example, html } from '../web/html.ts';
import type { PageSection } from '../web/page.ts';

export const ipPage: PageSection = {
  nav: 'IP',
  title: 'Caller IP',
  lead: 'Returns the public address your requests come from, as JSON or as plain text for scripts.',
  body(p) {
    const b = p.urls.base;
    return html`<div class="split"><div class="examples">
${example('JSON', `curl ${b}/rest/api/v1/ip`)}
${example('Plain text, for scripts', `curl '${b}/api/ip?format=text'`)}
</div>
<div class="tool"><p class="big">Your address: <strong id="ip-value">${p.clientIp}</strong></p>
<div class="actions"><button type="button" id="ip-refresh" disabled data-needs-js>Check again</button></div>
<p class="status" id="ip-status" role="status"></p></div></div>`;
  },
};
