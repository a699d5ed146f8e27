// The Reverse proxy section of the home page: examples built from the configured public URLs.
import { copyField, example, html } from '../../page/html.ts';
import type { PageInput, PageSection } from '../../page/section.ts';
import { aptUri, gitInsteadOf, pipIndexUrl, proxyPrefix } from './clients.ts';
import type { EcosystemDef } from './ecosystems/define.ts';

/** The set-up lines of each ecosystem profile this server serves (DEVUTIL_PROXY_ECOSYSTEMS). */
function ecosystems(all: readonly EcosystemDef[], p: PageInput, proxy: string) {
  const on = all.filter((d) => p.config.proxy.ecosystems.includes(d.name));
  return on.map(
    (d) =>
      html`<div class="ecosystem" data-ecosystem="${d.name}"><h3>${d.title}</h3><p>${d.summary}</p>
${d.setup({ urls: p.urls, config: p.config, proxy }).map((l) => example(l.label, l.text))}</div>`,
  );
}

export const proxyPage = (all: readonly EcosystemDef[]): PageSection => ({
  nav: 'Proxy',
  title: 'Reverse proxy',
  lead: 'Reach GitHub, Debian and PyPI through this server: put the original host and path after the proxy address. Only the hosts listed below are served.',
  body(p) {
    const x = proxyPrefix(p);
    return html`<div class="split"><div class="examples">
${example('git clone', `git clone ${x}/github.com/<owner>/<repo>.git`)}
${example('Every GitHub clone through the proxy', `git config --global url."${gitInsteadOf(x)}".insteadOf "https://github.com/"`)}
${example('Release download', `curl -fLO ${x}/github.com/<owner>/<repo>/releases/latest/download/<asset>`)}
${example('apt (/etc/apt/sources.list)', `deb ${aptUri(x, 'deb.debian.org')}/debian bookworm main\ndeb ${aptUri(x, 'security.debian.org')}/debian-security bookworm-security main`)}
${example('pip', `pip install --index-url ${pipIndexUrl(x)} <package>`)}
${ecosystems(all, p, x)}
<details><summary>Allowed hosts</summary><ul class="hosts">${p.config.proxy.allow.map((h) => html`<li><code>${h}</code></li>`)}</ul></details>
</div>
<form class="tool" id="proxy-form">
<div class="field"><label for="proxy-in">Original URL, git remote or apt line</label>
<input id="proxy-in" type="text" spellcheck="false" autocomplete="off" placeholder="https://github.com/owner/repo" aria-describedby="proxy-help">
<small id="proxy-help">For example https://github.com/nodejs/node, deb http://deb.debian.org/debian bookworm main or https://pypi.org/simple/requests/</small></div>
${copyField('proxy-out', 'Proxied URL')}
<p class="status" id="proxy-status" role="status"></p>
<div class="example" id="proxy-snippet-box" hidden><div class="example-head"><span id="proxy-snippet-label">Snippet</span><button type="button" class="copy" data-copy>Copy</button></div><pre><code id="proxy-snippet"></code></pre></div>
</form></div>`;
  },
});
