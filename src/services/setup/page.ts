// The Set me up section of the home page: the one command, with the tools this instance serves.
import { example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';
import { isEnabled } from '../define.ts';
import { ECOSYSTEMS } from '../proxy/ecosystems/index.ts';
import { scriptValues, TOOLS } from './script.ts';

export const setupPage: PageSection = {
  nav: 'Set up',
  title: 'Set me up',
  lead: 'One command points your tools at this server: it writes each tool’s own setting (git, pip, apt, npm, go, Maven, Docker, Hugging Face) and prints Gradle’s repository lines and the Syncthing relay URI. Every file it changes is backed up first, and --undo puts it back.',
  body(p) {
    const on = (name: string) => p.services.some((d) => d.name === name && isEnabled(p.config, d));
    const v = scriptValues({ ...p, proxy: on('proxy'), relay: on('relay'), ecosystems: ECOSYSTEMS });
    const tools = TOOLS.filter((t) => v.tools[t] !== undefined);
    const cmd = `curl -fsSL ${p.urls.base}/setup.sh | sh -s --`;
    const env = v.private ? 'DEVUTIL_PROXY_SECRET=<SECRET> ' : '';
    const pipe = v.private ? `curl -fsSL ${p.urls.base}/setup.sh | ${env}sh -s --` : cmd;
    if (!tools.length)
      return html`<p class="off" role="note">This server serves none of the tools the script sets up (the proxy and the relay are off).</p>`;
    const some = tools.slice(0, 2);
    return html`<div class="examples">
${example('See what it would change', `${pipe} --dry-run ${tools.join(' ')}`)}
${example('Set up every tool this server serves', `${pipe} all`)}
${example(`Only some, e.g. ${some.join(' and ')}`, `${pipe} ${some.join(' ')}`)}
${example('Put every file back as it was', `${cmd} --undo`)}
<p class="small">Tools on this server: ${tools.map((t, i) => html`${i ? ', ' : ''}<code>${t}</code>`)}. apt sources and Docker’s daemon.json are changed only when the script runs as root; otherwise it prints what to put there. The script refuses to run, changing nothing, when it cannot reach this server.</p>
</div>`;
  },
};
