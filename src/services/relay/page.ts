// The Syncthing relay section of the home page: examples built from the configured public URLs.
import { copyField, example, html } from '../web/html.ts';
import type { PageSection } from '../web/page.ts';

export const relayPage: PageSection = {
  nav: 'Relay',
  title: 'Syncthing relay',
  lead: 'A relay for Syncthing: devices that cannot reach each other directly keep syncing through it. Add the relay URI to your devices’ listen addresses.',
  body(p) {
    const host = new URL(p.urls.base).hostname;
    const placeholder = `relay://${host}:${p.config.relay.port}/?id=<DEVICE_ID>`;
    return html`<div class="split"><div class="examples">
${example('Syncthing → Settings → Connections → Sync Protocol Listen Addresses', `default, ${placeholder}`)}
${example('Relay URI and live status as JSON', `curl ${p.urls.base}/rest/api/v1/relay`)}
</div>
<div class="tool" id="relay-box">
${copyField('relay-uri', 'Relay URI', placeholder)}
<dl class="stats" aria-live="polite"><div><dt>Sessions</dt><dd id="relay-sessions">–</dd></div><div><dt>Connections</dt><dd id="relay-conns">–</dd></div><div><dt>Bytes relayed</dt><dd id="relay-bytes">–</dd></div></dl>
<p class="status" id="relay-status" role="status"></p></div></div>`;
  },
};
