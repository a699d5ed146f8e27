// setup.sh as served: the POSIX sh template beside this file (setup.sh) with this instance's
// settings block filled in. The URLs come from where the proxy's and the relay's set-up lines come
// from (proxy/clients.ts, each ecosystem's `script`, relay/page.ts), never from the request.
import { readFileSync } from 'node:fs';
import type { Config } from '../../config.ts';
import type { PublicUrls } from '../../context.ts';
import { aptUri, gitInsteadOf, hostPathClients, pipIndexUrl, proxyPrefix } from '../proxy/clients.ts';
import type { EcosystemDef } from '../proxy/ecosystems/define.ts';
import { advertisedRelay } from '../relay/page.ts';
import { APT_PROBES, PROBES } from './probes.ts';

/** The tools setup.sh knows, in the order it lists them. */
export const TOOLS = ['git', 'pip', 'apt', 'npm', 'go', 'docker', 'hf', 'relay'] as const;
export type Tool = (typeof TOOLS)[number];

export interface ScriptInput {
  config: Config;
  urls: PublicUrls;
  version: string;
  /** Whether the proxy and the relay are served here. */
  proxy: boolean;
  relay: boolean;
  ecosystems: readonly EcosystemDef[];
}

/** What the script writes, per tool served here (a tool not served has no entry). */
export interface ScriptValues {
  base: string;
  /** URLs the script fetches first: each must answer with this script (it refuses otherwise). */
  checks: string[];
  /** The proxy URLs carry `<SECRET>` (DEVUTIL_PROXY_SECRET), filled in from the user's environment. */
  private: boolean;
  tools: Partial<Record<Tool, string>>;
  pipTrustedHost: string;
  /** Debian host -> its URL through the proxy. */
  apt: [string, string][];
  dockerInsecure: string;
  /** Per tool served: `METHOD URL [Header: value]`, the file fetched through devutil before the tool is changed. */
  probes: Partial<Record<Tool, string>>;
}

/** A probe as setup.sh reads it: `METHOD URL [Header: value]` (URLs hold no spaces). */
function probeLine(url: string, o: { head?: boolean; header?: string }): string {
  return [o.head ? 'HEAD' : 'GET', url, ...(o.header ? [o.header] : [])].join(' ');
}

export function scriptValues(p: ScriptInput): ScriptValues {
  const tools: Partial<Record<Tool, string>> = {};
  let apt: [string, string][] = [];
  let pipTrustedHost = '';
  let dockerInsecure = '';
  const checks = [`${p.urls.base}/setup.sh`];
  if (p.proxy) {
    checks.push(`${p.urls.proxy}/setup.sh`);
    const x = proxyPrefix(p);
    const on = hostPathClients(p.config.proxy.allow);
    if (on.git) tools.git = gitInsteadOf(x);
    if (on.pip) {
      tools.pip = pipIndexUrl(x);
      // pip ignores a plain-http index unless its host is trusted (loopback is trusted anyway).
      if (tools.pip.startsWith('http:')) pipTrustedHost = new URL(p.urls.proxy).hostname;
    }
    apt = on.apt.map((h) => [h, aptUri(x, h)]);
    if (apt.length) tools.apt = apt.map(([h]) => h).join(' ');
    for (const d of p.ecosystems) {
      if (!d.script || !p.config.proxy.ecosystems.includes(d.name)) continue;
      tools[d.script.tool as Tool] = d.script.url({ urls: p.urls, config: p.config, proxy: x });
    }
    if (tools.docker?.startsWith('http:')) dockerInsecure = new URL(tools.docker).host;
  }
  if (p.relay) tools.relay = advertisedRelay(p).uri;
  const probes: Partial<Record<Tool, string>> = {};
  for (const [tool, probe] of Object.entries(PROBES) as [
    keyof typeof PROBES,
    (typeof PROBES)[keyof typeof PROBES],
  ][])
    if (tools[tool] !== undefined) probes[tool] = probeLine(`${tools[tool]}${probe.below}`, probe);
  const aptFirst = apt.find(([h]) => APT_PROBES[h] !== undefined);
  if (aptFirst) probes.apt = probeLine(`${aptFirst[1]}${APT_PROBES[aptFirst[0]]}`, {});
  return {
    base: p.urls.base,
    checks: [...new Set(checks)],
    private: p.proxy && p.config.proxy.secret !== '',
    tools,
    pipTrustedHost,
    apt,
    dockerInsecure,
    probes,
  };
}

/** A single-quoted sh word. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function settings(v: ScriptValues): string {
  const t = (k: Tool) => (k === 'apt' ? '' : (v.tools[k] ?? ''));
  const lines: [string, string][] = [
    ['DEVUTIL_URL', v.base],
    ['DEVUTIL_CHECK', v.checks.join(' ')],
    ['DEVUTIL_TOOLS', TOOLS.filter((k) => v.tools[k] !== undefined).join(' ')],
    ['DEVUTIL_PRIVATE', v.private ? '1' : '0'],
    ['GIT_URL', t('git')],
    ['PIP_URL', t('pip')],
    ['PIP_TRUSTED_HOST', v.pipTrustedHost],
    ['APT_MAP', v.apt.map(([h, u]) => `${h}=${u}`).join(' ')],
    ['NPM_URL', t('npm')],
    ['GO_URL', t('go')],
    ['HF_URL', t('hf')],
    ['DOCKER_MIRROR', t('docker')],
    ['DOCKER_INSECURE', v.dockerInsecure],
    ['RELAY_URI', t('relay')],
    ...TOOLS.filter((k) => k !== 'relay').map((k): [string, string] => [
      `${k.toUpperCase()}_PROBE`,
      v.probes[k] ?? '',
    ]),
  ];
  return `# This instance (filled in by devutil when it served this script).\n${lines.map(([k, x]) => `${k}=${q(x)}`).join('\n')}`;
}

const MARK = '# @SETTINGS@';
let template: string | null = null;

export function renderScript(v: ScriptValues): string {
  template ??= readFileSync(new URL('./setup.sh', import.meta.url), 'utf8');
  if (!template.includes(MARK)) throw new Error('setup.sh has no settings marker');
  return template.replace(MARK, () => settings(v));
}
