// The production path without Docker: a clean copy installed with `npm ci --omit=dev` and started
// with `node bin/devutil.js serve`, the commands deploy/Dockerfile and deploy/devutil.service use.
// Every utility answers; on a runtime that strips types itself (Node 24/26) no tsx or esbuild module
// is loaded and no esbuild process runs in the server's process tree.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NATIVE_TS } from '../../scripts/ts-loader.js';
import { freePort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const RECORDER = join(ROOT, 'test/fixtures/core/record-loads.mjs');
/** Node 24/26 and 22.15+ have synchronous module hooks to record every load. */
const CAN_RECORD = NATIVE_TS && 'registerHooks' in (await import('node:module'));

/** The checkout as a clean clone would have it: tracked and new files, nothing ignored. */
function copyCheckout(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(ROOT, f))) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(to, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(to, f));
  }
}

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
  const loadLog = join(tempDir('devutil-loads-'), 'loads.txt');

  before(async () => {
    dir = tempDir('devutil-prod-');
    copyCheckout(dir);
    // The runtime under test runs npm too: its bin directory first on PATH.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
    };
    delete env['NODE_OPTIONS'];
    const install = execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
    assert.doesNotMatch(install, /EBADENGINE/);
    assert.ok(existsSync(join(dir, 'web/dist/manifest.json')), 'npm ci built the page (prepare)');
    assert.ok(!existsSync(join(dir, 'node_modules/typescript')), 'dev dependencies are left out');

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

  it('finds the packaged IP databases: 8.8.8.8 is US, AS15169, Google LLC', async () => {
    const r = await fetch(`${base}/rest/api/v1/ip?details=1`, { headers: { 'x-forwarded-for': '8.8.8.8' } });
    assert.deepEqual(await r.json(), {
      status: 1,
      message: 'success',
      data: { ip: '8.8.8.8', scope: 'public', country: 'US', asn: 'AS15169', org: 'Google LLC' },
    });
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
