// The production path without Docker: a clean copy whose page assets were built beforehand (the
// image's build stage), installed with `npm ci --omit=dev` and started with `node bin/devutil.js
// serve`, the commands deploy/Dockerfile and deploy/devutil.service use. Every utility answers. On a
// runtime that strips types itself (Node 24/26) the install holds no TypeScript loader or bundler
// (tsx, esbuild, typescript), no such module is loaded and no esbuild process runs; on Node 20 the
// install is the one README names for it (`npm ci`, development dependencies and tsx included).
// Either way the server builds nothing: it serves the prebuilt web/dist/ untouched. On Node 20 that
// install's prepare step builds the page itself (the bundler is there), as README's Node 20 install
// does, so no page is built beforehand there: it would be built twice, and only the second one served.
// The production install carries no heavy extra (src/infra/config/extras.ts): its size is printed and held
// to MAX_MIB, every utility still answers, the browser pool draws Mermaid from the page build's copy
// of the bundle, and a feature whose extra is missing answers 503 naming its install line.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NATIVE_TS } from '../../scripts/ts-loader.js';
import type { Manifest } from '../../web/dist.ts';
import { copyCheckout } from '../helpers/checkout.ts';
import { freePort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The production install's node_modules at most (docs/deployment.md, "Lean install"). */
const MAX_MIB = 150;
const PEERS = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }
).peerDependencies;
/** Node 20 installs the development dependencies (tsx), and with them every extra. */
const LEAN = NATIVE_TS;
const RECORDER = join(ROOT, 'test/fixtures/core/record-loads.mjs');
/** Node 24/26 and 22.15+ have synchronous module hooks to record every load. */
const CAN_RECORD = NATIVE_TS && 'registerHooks' in (await import('node:module'));

/** Every process below `pid`, with its command name. */
function descendants(pid: number): { pid: number; comm: string }[] {
  const children = new Map<number, number[]>();
  const comm = new Map<number, string>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      comm.set(Number(d), name);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      /* exited meanwhile */
    }
  }
  const out: { pid: number; comm: string }[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push({ pid: c, comm: comm.get(c) ?? '' });
      walk(c);
    }
  };
  walk(pid);
  return out;
}

describe('production install (npm ci --omit=dev, node bin/devutil.js serve)', {
  skip: toolSkip('java', ['-version']),
}, () => {
  let dir = '';
  let base = '';
  let proc: ChildProcess | undefined;
  let output = '';
  let installLog = '';
  let manifest: Manifest | undefined;
  let builtAt = 0;
  let mib = 0;
  const loadLog = join(tempDir('devutil-loads-'), 'loads.txt');

  before(async () => {
    dir = tempDir('devutil-prod-');
    copyCheckout(dir);
    // The build stage: the page's assets are made here, where the bundler is installed. The full
    // install (Node 20) builds them in its prepare step instead.
    if (LEAN) {
      const { buildAssets, writeDist } = await import('../../web/build.ts');
      writeDist(await buildAssets(), join(dir, 'web/dist'));
    }
    // The runtime under test runs npm too: its bin directory first on PATH.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
    };
    delete env['NODE_OPTIONS'];
    // Node 20 cannot strip types: its path is the full install (tsx is a development dependency).
    const omit = NATIVE_TS ? ['--omit=dev'] : [];
    const install = spawnSync('npm', ['ci', ...omit, '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
    installLog = `${install.stdout}${install.stderr}`;
    assert.equal(install.status, 0, installLog.slice(-3000));
    assert.doesNotMatch(installLog, /EBADENGINE/);
    mib = Number(execFileSync('du', ['-sm', join(dir, 'node_modules')], { encoding: 'utf8' }).split('\t')[0]);
    process.stdout.write(`# npm ci${omit.length ? ' --omit=dev' : ''}: node_modules ${mib} MiB\n`);
    // What the server will serve; it must not touch it.
    manifest = JSON.parse(readFileSync(join(dir, 'web/dist/manifest.json'), 'utf8')) as Manifest;
    builtAt = statSync(join(dir, 'web/dist/manifest.json')).mtimeMs;

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    proc = spawn(process.execPath, ['bin/devutil.js', 'serve'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/root',
        NODE_ENV: 'production',
        ...(CAN_RECORD ? { NODE_OPTIONS: `--import=${RECORDER}`, DEVUTIL_LOAD_LOG: loadLog } : {}),
        DEVUTIL_DATA_DIR: tempDir('devutil-prod-data-'),
        DEVUTIL_HOST: '127.0.0.1',
        DEVUTIL_PORT: String(port),
        DEVUTIL_PUBLIC_URL: base,
        DEVUTIL_RELAY_PORT: String(await freePort()),
        DEVUTIL_RELAY_STATUS_PORT: '0',
        // The details check below sends its caller through X-Forwarded-For.
        DEVUTIL_TRUST_PROXY: 'loopback',
        DEVUTIL_DRAIN_DELAY_MS: '0', // SIGTERM at the end stops at once
      },
    });
    proc.stdout?.on('data', (c) => {
      output += c;
    });
    proc.stderr?.on('data', (c) => {
      output += c;
    });
    const until = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null)
        throw new Error(`devutil exited (${proc.exitCode}):\n${output.slice(-3000)}`);
      if (Date.now() > until) throw new Error(`devutil did not come up:\n${output.slice(-3000)}`);
      const ok = await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  after(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc?.once('exit', r));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
  });

  it('stores a file and gives it back byte for byte', async () => {
    const body = new FormData();
    const bytes = Buffer.from('production install\n'.repeat(100));
    body.append('file', new Blob([bytes], { type: 'text/plain' }), 'prod.txt');
    const up = await fetch(`${base}/api/file/prod-check.txt`, { method: 'POST', body });
    assert.equal(up.status, 200);
    const json = (await up.json()) as { success: boolean; data: { key: string } };
    assert.equal(json.success, true);
    assert.equal(json.data.key, 'prod-check.txt');
    const down = await fetch(`${base}/api/file/prod-check.txt`);
    assert.equal(down.status, 200);
    assert.deepEqual(Buffer.from(await down.arrayBuffer()), bytes);
  });

  it('answers the caller IP', async () => {
    const r = await fetch(`${base}/rest/api/v1/ip`);
    assert.deepEqual(await r.json(), { status: 1, message: 'success', data: { ip: '127.0.0.1' } });
  });

  it('finds the packaged IP databases (all installs but the lean one): 8.8.8.8 is US, AS15169, Google LLC', {
    skip: LEAN && 'the IP databases are an extra the production install leaves out',
  }, async () => {
    const r = await fetch(`${base}/rest/api/v1/ip?details=1`, { headers: { 'x-forwarded-for': '8.8.8.8' } });
    assert.deepEqual(await r.json(), {
      status: 1,
      message: 'success',
      data: { ip: '8.8.8.8', scope: 'public', country: 'US', asn: 'AS15169', org: 'Google LLC' },
    });
  });

  it('holds the production install to the size budget, with no heavy extra in it', {
    skip: !LEAN && 'Node 20 installs the development dependencies',
  }, () => {
    assert.ok(mib > 0 && mib <= MAX_MIB, `node_modules is ${mib} MiB, over ${MAX_MIB}`);
    // The extras only development installs need (prom-client, a production dependency, brings @opentelemetry/api).
    const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const extras = Object.keys(PEERS).filter((p) => lock.packages[`node_modules/${p}`]?.dev);
    assert.ok(extras.includes('mermaid') && extras.includes('@terrastruct/d2'), extras.join(' '));
    const present = extras.filter((p) => existsSync(join(dir, 'node_modules', p)));
    assert.deepEqual(present, []);
  });

  it('answers ?details=1 without the IP databases with 503 in its envelope, naming the install line', {
    skip: !LEAN && 'Node 20 installs every extra',
  }, async () => {
    const r = await fetch(`${base}/rest/api/v1/ip?details=1`, { headers: { 'x-forwarded-for': '8.8.8.8' } });
    assert.equal(r.status, 503);
    const j = (await r.json()) as { status: number; message: string; data: unknown };
    assert.equal(j.status, 0);
    assert.equal(j.data, null);
    const line = `npm install --omit=dev --no-save --save-prod @ip-location-db/asn@${PEERS['@ip-location-db/asn']}`;
    assert.ok(j.message.includes(line), j.message);
  });

  it('answers a D2 diagram without @terrastruct/d2 with 503 naming the install line, and logged it at start', {
    skip: !LEAN && 'Node 20 installs every extra',
  }, async () => {
    const r = await fetch(`${base}/plantuml/d2/svg`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'a -> b',
    });
    const text = await r.text();
    assert.equal(r.status, 503, text.slice(0, 500));
    assert.ok(text.includes(`--save-prod @terrastruct/d2@${PEERS['@terrastruct/d2']}`), text.slice(0, 500));
    // One start-up line lists the extras not installed, D2 among them (written a second after the
    // server listens: waited for up to 10 s).
    const find = () => output.split('\n').find((l) => l.includes('optional extras not installed'));
    for (const until = Date.now() + 10_000; !find() && Date.now() < until; )
      await new Promise((r) => setTimeout(r, 50));
    const line = find();
    assert.ok(line, output.slice(-3000));
    assert.match(line, /D2 diagrams/);
  });

  it('renders Graphviz and Mermaid through the Kroki API on the default engines', async () => {
    for (const [type, body, word] of [
      ['graphviz', 'digraph { prodcheck -> rendered }', 'prodcheck'],
      ['mermaid', 'graph TD\n  prodcheck --> rendered', 'prodcheck'],
    ]) {
      const r = await fetch(`${base}/plantuml/${type}/svg`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body,
      });
      const svg = await r.text();
      assert.equal(r.status, 200, `${type}: ${svg.slice(0, 500)}`);
      assert.match(svg, new RegExp(`<svg[\\s\\S]*${word}`));
    }
  });

  it("draws a Mermaid pie in Chromium from the page build's copy of the bundle", {
    skip: toolSkip('chromium'),
  }, async () => {
    const r = await fetch(`${base}/plantuml/mermaid/svg`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'pie title Prodcheck\n  "yes" : 3\n  "no" : 1',
    });
    const svg = await r.text();
    assert.equal(r.status, 200, svg.slice(0, 500));
    assert.match(svg, /<svg[\s\S]*Prodcheck/);
  });

  it('answers a Telegram relay request without its fields with 400 in its envelope', async () => {
    const r = await fetch(`${base}/rest/api/v1/telegram`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(r.status, 400);
    const j = (await r.json()) as { status: number; msg: string; data: unknown };
    assert.equal(j.status, 0);
    assert.match(j.msg, /apiKey|chatId/);
  });

  it('refuses to proxy a host outside the allow-list with 403', async () => {
    const r = await fetch(`${base}/proxy/example.com/index.html`);
    assert.equal(r.status, 403);
    assert.match(await r.text(), /example\.com/);
  });

  it('renders a random WebP image', async () => {
    const r = await fetch(`${base}/rest/api/v1/image?width=64&height=48`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/webp');
    const b = Buffer.from(await r.arrayBuffer());
    assert.equal(b.subarray(0, 4).toString(), 'RIFF');
    assert.equal(b.subarray(8, 12).toString(), 'WEBP');
  });

  it('renders a PlantUML diagram as SVG on the real engine', async () => {
    // "Bob -> Alice : hello" in PlantUML's text encoding
    const r = await fetch(`${base}/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000`);
    assert.equal(r.status, 200, await r.clone().text());
    const svg = await r.text();
    assert.match(svg, /<svg/);
    assert.match(svg, /Alice/);
  });

  it('serves a generated avatar', async () => {
    const hash = createHash('md5').update('prod@example.com').digest('hex');
    const r = await fetch(`${base}/avatar/${hash}?d=identicon&s=64`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^image\//);
    assert.ok((await r.arrayBuffer()).byteLength > 100);
  });

  it('reports the Syncthing relay', async () => {
    const until = Date.now() + 20_000;
    for (;;) {
      const r = await fetch(`${base}/rest/api/v1/relay`);
      const j = (await r.json()) as { status: number; data: { uri?: string } | null };
      if (r.status === 200) {
        assert.equal(j.status, 1);
        assert.match(j.data?.uri ?? '', /^relay:\/\/127\.0\.0\.1:\d+\/\?id=[A-Z0-9-]{63}/);
        break;
      }
      if (Date.now() > until) assert.fail(`relay status ${r.status}: ${JSON.stringify(j)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  });

  it('serves the home page', async () => {
    const r = await fetch(`${base}/`);
    assert.equal(r.status, 200);
    assert.match(await r.text(), /devutil/);
  });

  it('installs no TypeScript loader or bundler', {
    skip: !NATIVE_TS && 'Node 20 installs tsx to run',
  }, () => {
    const present = ['tsx', 'esbuild', '@esbuild', 'typescript'].filter((p) =>
      existsSync(join(dir, 'node_modules', p)),
    );
    assert.deepEqual(present, []);
    // The install's own packages are there, so an empty node_modules cannot pass.
    assert.ok(existsSync(join(dir, 'node_modules/fastify/package.json')));
    assert.match(installLog, /using the page assets in web\/dist\//, 'prepare used the prebuilt assets');
  });

  it("builds the page in the full install's prepare step", {
    skip: LEAN && 'the production install has no bundler: the page is built beforehand',
  }, () => {
    assert.match(installLog, /web: built app-[0-9a-f]+\.js/, 'prepare built the page');
  });

  it('serves the page assets built beforehand, without building anything', async () => {
    assert.ok(manifest);
    const page = await (await fetch(`${base}/`)).text();
    const js = `/assets/${manifest.files['app.js']}`;
    assert.ok(page.includes(`<script type="module" src="${js}">`), 'the page loads the prebuilt script');
    const r = await fetch(`${base}${js}`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/javascript/);
    const served = Buffer.from(await r.arrayBuffer());
    assert.deepEqual(served, readFileSync(join(dir, 'web/dist', manifest.files['app.js'])));
    assert.equal(statSync(join(dir, 'web/dist/manifest.json')).mtimeMs, builtAt, 'web/dist is untouched');
    assert.doesNotMatch(output, /page assets (missing|in web\/dist\/ were built from other sources)/);
  });

  it('loads no tsx or esbuild and runs no esbuild process', {
    skip: !CAN_RECORD && 'this runtime needs tsx to run TypeScript',
  }, () => {
    const loads = readFileSync(loadLog, 'utf8').split('\n').filter(Boolean);
    // The recorder saw the server itself, so an empty or broken record cannot pass.
    assert.ok(
      loads.some((u) => u.endsWith('/src/server.ts')),
      'the load record includes src/server.ts',
    );
    assert.ok(
      loads.some((u) => u.includes('/node_modules/fastify/')),
      'and fastify',
    );
    const bad = loads.filter((u) => /\/node_modules\/(tsx|esbuild|@esbuild)\//.test(u));
    assert.deepEqual(bad, []);
    assert.ok(proc?.pid);
    const tree = descendants(proc.pid);
    assert.deepEqual(
      tree.filter((p) => /esbuild|tsx/.test(p.comm)),
      [],
      `process tree: ${JSON.stringify(tree)}`,
    );
  });
});
