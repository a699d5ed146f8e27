// Home page sections for the network utilities: reverse proxy, diagrams, avatars, Syncthing relay.
import { deflateRawSync } from 'node:zlib';
import { encode64 } from '../../../web/src/plantuml-encode.ts';
import { copyField, example, html, type Raw } from './html.ts';
import type { PageInput } from './page.ts';
import { section } from './sections-data.ts';

export const SAMPLE_DIAGRAM = '@startuml\nAlice -> Bob : hello\nBob --> Alice : hi!\n@enduml\n';

export function proxySection(p: PageInput): Raw {
  const x = p.proxy.secret ? `${p.urls.proxy}/t/<SECRET>` : p.urls.proxy;
  return section(
    'proxy',
    'Reverse proxy',
    'Reach GitHub, Debian and PyPI through this server: put the original host and path after the proxy address. Only the hosts listed below are served.',
    p.enabled.proxy,
    html`<div class="split"><div class="examples">
${example('git clone', `git clone ${x}/github.com/<owner>/<repo>.git`)}
${example('Every GitHub clone through the proxy', `git config --global url."${x}/https://github.com/".insteadOf "https://github.com/"`)}
${example('Release download', `curl -LO ${x}/github.com/<owner>/<repo>/releases/latest/download/<asset>`)}
${example('apt (/etc/apt/sources.list)', `deb ${x}/deb.debian.org/debian bookworm main\ndeb ${x}/security.debian.org/debian-security bookworm-security main`)}
${example('pip', `pip install --index-url ${x}/pypi.org/simple <package>`)}
<details><summary>Allowed hosts</summary><ul class="hosts">${p.proxy.allow.map((h) => html`<li><code>${h}</code></li>`)}</ul></details>
</div>
<form class="tool" id="proxy-form">
<div class="field"><label for="proxy-in">Original URL, git remote or apt line</label>
<input id="proxy-in" type="text" spellcheck="false" autocomplete="off" placeholder="https://github.com/owner/repo" aria-describedby="proxy-help">
<small id="proxy-help">For example https://github.com/nodejs/node, deb http://deb.debian.org/debian bookworm main or https://pypi.org/simple/requests/</small></div>
${copyField('proxy-out', 'Proxied URL')}
<p class="status" id="proxy-status" role="status"></p>
<div class="example" id="proxy-snippet-box" hidden><div class="example-head"><span id="proxy-snippet-label">Snippet</span><button type="button" class="copy" data-copy>Copy</button></div><pre><code id="proxy-snippet"></code></pre></div>
</form></div>`,
  );
}

export function plantumlSection(p: PageInput): Raw {
  const u = p.urls.plantuml;
  const enc = encode64(
    deflateRawSync(Buffer.from('Alice -> Bob : hello\nBob --> Alice : hi!'), { level: 9 }),
  );
  return section(
    'plantuml',
    'Diagrams',
    'A PlantUML server: editors, Markdown renderers and docs tools that ask for a “PlantUML server URL” work when pointed here.',
    p.enabled.plantuml,
    html`<div class="split"><div class="examples">
${example('PlantUML server URL for editors and plugins', u)}
${example('Render an encoded diagram', `curl -o diagram.svg ${u}/svg/${enc}`)}
${example('Render a file', `curl --data-binary @diagram.puml ${u}/png > diagram.png`)}
</div>
<form class="tool" id="uml-form">
<div class="field"><label for="uml-src">Diagram source</label><textarea id="uml-src" rows="8" spellcheck="false" class="mono">${SAMPLE_DIAGRAM}</textarea></div>
<div class="field inline"><label for="uml-fmt">Format</label><select id="uml-fmt"><option>svg</option><option>png</option><option>txt</option></select></div>
<figure class="preview uml" aria-live="polite"><img id="uml-img" src="/plantuml/svg/${enc}" alt="Diagram preview"><pre id="uml-txt" hidden></pre></figure>
${copyField('uml-url', 'Encoded URL', `${u}/svg/${enc}`)}
<p class="status" id="uml-status" role="status"></p>
</form></div>`,
  );
}

export function avatarSection(p: PageInput): Raw {
  const a = p.urls.avatar;
  return section(
    'avatar',
    'Avatars',
    'Gravatar-compatible avatars: anything that builds a Gravatar URL (WordPress, GitLab, Gitea, Discourse) works by swapping the host; unknown addresses get a generated picture.',
    p.enabled.avatar,
    html`<div class="split"><div class="examples">
${example('Avatar URL (SHA-256 or MD5 of the trimmed, lower-cased email)', `${a}/avatar/<hash>?s=80&d=identicon`)}
${example('Hash an email in a shell', `printf '%s' 'me@example.com' | sha256sum`)}
${example('Gravatar base URL for Gitea, GitLab, Discourse…', `${a}/avatar/`)}
</div>
<form class="tool" id="avatar-form">
<p class="note">The hash is computed in your browser; the email address is never sent.</p>
<div class="grid2">
<div class="field"><label for="avatar-email">Email</label><input id="avatar-email" type="email" autocomplete="email" spellcheck="false" placeholder="you@example.com"></div>
<div class="field"><label for="avatar-d">Default picture</label><select id="avatar-d">${['identicon', 'retro', 'monsterid', 'wavatar', 'robohash', 'mp', 'initials', 'blank'].map((d) => html`<option>${d}</option>`)}</select></div>
</div>
<div class="avatars" id="avatar-previews" aria-live="polite"></div>
${copyField('avatar-url', 'Avatar URL')}
<p class="status" id="avatar-status" role="status"></p>
</form></div>`,
  );
}

export function relaySection(p: PageInput): Raw {
  const host = new URL(p.urls.base).hostname;
  const placeholder = `relay://${host}:${p.relay.port}/?id=<DEVICE_ID>`;
  return section(
    'relay',
    'Syncthing relay',
    'A relay for Syncthing: devices that cannot reach each other directly keep syncing through it. Add the relay URI to your devices’ listen addresses.',
    p.enabled.relay,
    html`<div class="split"><div class="examples">
${example('Syncthing → Settings → Connections → Sync Protocol Listen Addresses', `default, ${placeholder}`)}
${example('Relay URI and live status as JSON', `curl ${p.urls.base}/rest/api/v1/relay`)}
</div>
<div class="tool" id="relay-box">
${copyField('relay-uri', 'Relay URI', placeholder)}
<dl class="stats" aria-live="polite"><div><dt>Sessions</dt><dd id="relay-sessions">–</dd></div><div><dt>Connections</dt><dd id="relay-conns">–</dd></div><div><dt>Bytes relayed</dt><dd id="relay-bytes">–</dd></div></dl>
<p class="status" id="relay-status" role="status"></p></div></div>`,
  );
}
