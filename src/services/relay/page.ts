// The Syncthing relay section of the home page: the URI as the relay advertises it (host from
// DEVUTIL_RELAY_EXT_ADDRESS or the public URL, the relay's real device ID once its identity
// exists; the page script fills it in live otherwise), and what other devices need to reach it.
import { resolve } from 'node:path';
import { copyField, example, html } from '../../page/html.ts';
import type { PageInput, PageSection } from '../../page/section.ts';
import { readIdentity } from './identity.ts';
import { relaySettings, relayUri } from './settings.ts';

const LOCAL = /^(localhost|127(\.\d{1,3}){3}|::1|0\.0\.0\.0|::)$/i;

/** The relay URI as devices are told it (also printed by setup.sh, services/setup/). */
export function advertisedRelay(p: Pick<PageInput, 'config' | 'urls' | 'version'>): {
  uri: string;
  host: string;
  port: number;
} {
  const s = relaySettings(p.config, p.urls.base, p.version);
  const port = s.publicPort || s.port;
  // Read only: the relay creates its identity when it starts (the page is rendered on its first
  // request; one rendered before that shows the placeholder, and the page script the real URI from
  // /rest/api/v1/relay instead).
  const id = readIdentity(resolve(p.config.server.dataDir));
  return { uri: relayUri(s.publicHost, port, id?.deviceId ?? '<DEVICE_ID>'), host: s.publicHost, port };
}

export const relayPage: PageSection = {
  nav: 'Relay',
  title: 'Syncthing relay',
  lead: 'A relay for Syncthing: devices that cannot reach each other directly keep syncing through it. Add the relay URI to your devices’ listen addresses.',
  body(p) {
    const { uri, host, port } = advertisedRelay(p);
    const reach = LOCAL.test(host)
      ? html`<p class="note" id="relay-reach">This URI names <code>${host}</code>, which only this machine can reach. For other devices, start devutil with <code>DEVUTIL_PUBLIC_URL</code> set to the address they use, or <code>DEVUTIL_RELAY_EXT_ADDRESS=host[:port]</code>.</p>`
      : html`<p class="note" id="relay-reach">Other devices connect to <code>${host}:${port}</code>. If they reach this server under another name or port (port forwarding), set <code>DEVUTIL_RELAY_EXT_ADDRESS=host[:port]</code>.</p>`;
    return html`<div class="split"><div class="examples">
<div class="example"><div class="example-head"><span>Syncthing → Settings → Connections → Sync Protocol Listen Addresses</span><button type="button" class="copy" data-copy hidden>Copy</button></div><pre><code id="relay-example">default, ${uri}</code></pre></div>
${example('Relay URI and live status as JSON', `curl ${p.urls.base}/rest/api/v1/relay`)}
</div>
<div class="tool" id="relay-box">
${copyField('relay-uri', 'Relay URI', uri)}
${reach}
<dl class="stats" aria-live="polite"><div><dt>Sessions</dt><dd id="relay-sessions">–</dd></div><div><dt>Connections</dt><dd id="relay-conns">–</dd></div><div><dt>Bytes relayed</dt><dd id="relay-bytes">–</dd></div></dl>
<p class="status" id="relay-status" role="status"></p></div></div>`;
  },
};
