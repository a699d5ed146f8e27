// The process as users run it: `devutil serve` start-up, config errors, graceful SIGTERM, cluster.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TS_EXEC_ARGV } from '../../scripts/ts-loader.js';
import { freePort } from '../helpers/ports.ts';
import { startDevutilProcess } from '../helpers/process.ts';
import { sharedDiagramsBuildEnv, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { waitFor } from '../helpers/wait.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const RECORDER = join(ROOT, 'test/fixtures/core/record-loads.mjs');
const BIN = join(ROOT, 'bin/devutil.js');
/** Node 22.15+/24/26 have synchronous module hooks, which record-loads.mjs uses. */
const HAS_HOOKS = 'registerHooks' in (await import('node:module'));
const run = promisify(execFile);

/**
 * `prestart` (the default's JVM at start-up) for the one test that starts from the printed default
 * config: the others are about signals, config errors and IP shapes, and a JVM started and stopped
 * for each of them was most of this file's CPU.
 */
function baseEnv(port: number, prestart = false): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '/root',
    DEVUTIL_PORT: String(port),
    DEVUTIL_HOST: '127.0.0.1',
    DEVUTIL_DATA_DIR: tempDir(),
    DEVUTIL_LOG_LEVEL: 'info',
    DEVUTIL_RELAY_ENABLED: 'false',
    DEVUTIL_DRAIN_DELAY_MS: '0',
    DEVUTIL_DIAGRAMS_PRESTART: String(prestart),
    // The run's PlantUML build (test/helpers/server.ts): a server that starts its JVM at start-up
    // need not compile the worker and train its class archive again.
    ...sharedDiagramsBuildEnv(),
  };
}

function exitOf(p: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode);
    p.once('exit', (code) => resolve(code));
  });
}

function waitUp(port: number): Promise<void> {
  const healthy = () =>
    fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false, // not listening yet
    );
  // Minutes, not the default 30 s: on Node 20 (tsx) at load 35 a start took longer than that.
  return waitFor(healthy, `the server on ${port} to come up`, 120_000);
}

interface Got {
  status: number;
  body: string;
  connection: string | undefined;
}

/** A GET on a connection of its own (keep-alive asked for when `keepAlive`, as proxies do). */
function get(port: number, path: string, keepAlive = false): Promise<Got> {
  return new Promise((resolve, reject) => {
    const headers = keepAlive ? { connection: 'keep-alive' } : {};
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A GET through a keep-alive agent; `closed` settles when the server closes that connection. */
function viaAgent(
  agent: Agent,
  port: number,
  path: string,
): Promise<Got & { reused: boolean; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      const closed = new Promise<void>((r) => req.socket?.once('close', () => r()));
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body,
          connection: res.headers.connection,
          reused: req.reusedSocket,
          closed,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** test/fixtures/core/slow-serve.ts (devutil's lifecycle plus slow routes) on a free port. */
async function slowServe(
  env: Record<string, string> = {},
): Promise<{ p: ChildProcess; port: number; log: () => string }> {
  const port = await freePort();
  const p = spawn(
    process.execPath,
    [...TS_EXEC_ARGV, new URL('../fixtures/core/slow-serve.ts', import.meta.url).pathname],
    {
      env: { ...baseEnv(port), ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  p.stdout?.on('data', (c) => {
    out += c;
  });
  return { p, port, log: () => out };
}

describe('devutil process', () => {
  it('refuses to start with DEVUTIL_PORT=abc and names the variable', async () => {
    const env = { ...baseEnv(1), DEVUTIL_PORT: 'abc', DEVUTIL_LOG_LEVEL: 'loud' };
    const err = await run(process.execPath, [BIN, 'serve'], { env }).then(
      () => assert.fail('expected a non-zero exit'),
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(err.code, 78);
    assert.match(err.stderr, /DEVUTIL_PORT: expected an integer, got "abc"/);
    assert.match(err.stderr, /DEVUTIL_LOG_LEVEL/);
  });

  it('answers --version and --help without loading the config schema or the server', {
    skip: !HAS_HOOKS && 'no module.registerHooks on this runtime',
  }, async () => {
    for (const flag of ['--version', '--help']) {
      const log = join(tempDir(), 'loads.txt');
      const r = await run(process.execPath, [`--import=${RECORDER}`, BIN, flag], {
        env: { ...baseEnv(1), DEVUTIL_LOAD_LOG: log },
      });
      assert.match(r.stdout, flag === '--version' ? /^\d+\.\d+\.\d+\n$/ : /--data-dir/);
      const loads = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      assert.ok(
        loads.some((u) => u.endsWith('/src/cli.ts')),
        'the record includes the CLI itself',
      );
      const heavy = loads.filter((u) => /\/src\/(config|server|main)\.ts$|\/node_modules\/fastify\//.test(u));
      assert.deepEqual(heavy, [], `${flag} loaded ${heavy.join(', ')}`);
    }
  });

  it('loads sharp, undici, ioredis, mmdb-lib and the AWS SDK only once something needs them', {
    skip: !HAS_HOOKS && 'no module.registerHooks on this runtime',
  }, async () => {
    const log = join(tempDir(), 'loads.txt');
    const p = await startDevutilProcess({
      NODE_OPTIONS: `--import=${RECORDER}`,
      DEVUTIL_LOAD_LOG: log,
      DEVUTIL_DIAGRAMS_PRESTART: 'false',
    });
    try {
      const lazy = /\/node_modules\/(sharp|undici|ioredis|mmdb-lib|@aws-sdk\/[^/]+)\//;
      const loaded = () =>
        readFileSync(log, 'utf8')
          .split('\n')
          .filter((u) => lazy.test(u));
      assert.ok(readFileSync(log, 'utf8').includes('/src/server.ts'), 'the record covers the server');
      assert.deepEqual(loaded(), [], 'loaded before any request needed them');
      assert.equal((await get(p.port, '/rest/api/v1/image')).status, 200);
      assert.ok(
        loaded().some((u) => u.includes('/node_modules/sharp/')),
        'the first image loads sharp',
      );
    } finally {
      assert.equal(await p.stop(), 0);
    }
  });

  it('prints help and the effective config with secrets masked', async () => {
    const help = await run(process.execPath, [BIN, '--help']);
    assert.match(help.stdout, /--data-dir/);
    const env = { ...baseEnv(8081), DEVUTIL_REDIS_URL: 'redis://:topsecret@127.0.0.1:1' };
    const cfg = await run(process.execPath, [BIN, 'config', '--port', '9999'], { env });
    const parsed = JSON.parse(cfg.stdout);
    assert.equal(parsed.server.port, 9999);
    assert.equal(parsed.redis.url, '********');
    assert.ok(!cfg.stdout.includes('topsecret'));
  });

  // One `devutil serve` for two proofs: it starts from the config it printed, and serves curl the
  // exact IP shapes once up.
  it('starts from its own printed config (devutil config > cfg.json; devutil serve --config cfg.json) and serves the exact IP shapes to curl', {
    skip: toolSkip('curl'),
  }, async () => {
    const port = await freePort();
    const printed = await run(process.execPath, [BIN, 'config'], { env: baseEnv(port, true) });
    assert.equal(printed.stderr, '');
    const file = join(tempDir(), 'cfg.json');
    writeFileSync(file, printed.stdout);
    // Everything now comes from the file: no DEVUTIL_* variable at all.
    const env = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' };
    const p = spawn(process.execPath, [BIN, 'serve', '--config', file], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout?.on('data', (c) => {
      out += c;
    });
    p.stderr?.on('data', (c) => {
      out += c;
    });
    try {
      await waitUp(port);
      assert.equal((await get(port, '/rest/api/v1/ip')).status, 200);
      const v1 = await run('curl', ['-s', `http://127.0.0.1:${port}/rest/api/v1/ip`]);
      assert.deepEqual(JSON.parse(v1.stdout), { status: 1, message: 'success', data: { ip: '127.0.0.1' } });
      const legacy = JSON.parse((await run('curl', ['-s', `http://127.0.0.1:${port}/api/ip`])).stdout);
      assert.match(legacy.version, /^V\d+\.\d+\.\d+$/);
      const text = await run('curl', ['-s', `http://127.0.0.1:${port}/api/ip?format=text`]);
      assert.equal(text.stdout, '127.0.0.1\n');
    } finally {
      p.kill('SIGTERM');
      assert.equal(await exitOf(p), 0, out);
    }
    assert.doesNotMatch(out, /"level":40|problem|deprecated/);
  });

  it('lets an in-flight request finish on SIGTERM, refuses new ones, and exits 0', async () => {
    const { p, port, log } = await slowServe();
    try {
      await waitUp(port);
      const slow = get(port, '/slow?ms=4000');
      await waitFor(() => log().includes('slow request started'), 'the slow request to reach the server');
      p.kill('SIGTERM');
      await waitFor(() => log().includes('shutting down'), 'the shutdown to start');
      assert.match(log(), /"inFlight":1/);
      // The listener closes as the shutdown starts: a new connection is refused while the slow
      // request still runs (the process is still there), not only once the process has gone.
      await waitFor(
        () =>
          get(port, '/healthz').then(
            () => false,
            () => true,
          ),
        'a new connection after SIGTERM to be refused',
        10_000,
      );
      assert.equal(p.exitCode, null, 'refused by the closed listener, not by an exited process');
      const r = await slow;
      assert.equal(r.status, 200);
      assert.deepEqual(JSON.parse(r.body), { done: true, ms: 4000 });
      assert.equal(await exitOf(p), 0);
      assert.match(log(), /shutting down/);
      assert.match(log(), /shut down cleanly/);
    } finally {
      if (p.exitCode === null) p.kill('SIGKILL');
    }
  });

  it('drains on SIGTERM: /readyz 503 at once, requests still served with Connection: close, then exit 0', async () => {
    const { p, port, log } = await slowServe({
      DEVUTIL_DRAIN_DELAY_MS: '3s',
      DEVUTIL_SHUTDOWN_TIMEOUT_MS: '20s',
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await waitUp(port);
      // A kept-alive connection from before the signal, and a request in flight across it.
      const first = await viaAgent(agent, port, '/rest/api/v1/ip');
      assert.equal(first.status, 200);
      assert.equal(first.connection, 'keep-alive');
      const inFlight = get(port, '/slow?ms=1500', true);
      await waitFor(() => log().includes('slow request started'), 'the slow request to reach the server');
      p.kill('SIGTERM');
      await waitFor(() => log().includes('draining'), 'the drain to start', 10_000);
      // New connections are still accepted; readiness says go elsewhere.
      const ready = await get(port, '/readyz');
      assert.equal(ready.status, 503);
      assert.equal(JSON.parse(ready.body).status, 'draining');
      assert.equal((await get(port, '/healthz')).status, 200, 'still serving while draining');
      // The kept-alive connection is answered (not refused), told to close, and closed after.
      const second = await viaAgent(agent, port, '/rest/api/v1/ip');
      assert.equal(second.status, 200);
      assert.equal(second.reused, true, 'the request went over the connection from before the signal');
      assert.equal(second.connection, 'close');
      await second.closed;
      // The request in flight at the signal finishes, and its answer closes its connection too.
      const slow = await inFlight;
      assert.equal(slow.status, 200);
      assert.deepEqual(JSON.parse(slow.body), { done: true, ms: 1500 });
      assert.equal(slow.connection, 'close');
      assert.equal(await exitOf(p), 0);
      assert.match(log(), /shut down cleanly/);
      await assert.rejects(get(port, '/healthz'), 'after the drain the listener is closed');
    } finally {
      agent.destroy();
      if (p.exitCode === null) p.kill('SIGKILL');
    }
  });

  it('cuts a slow transfer at the shutdown deadline, logs it and exits', async () => {
    const { p, port, log } = await slowServe({
      DEVUTIL_DRAIN_DELAY_MS: '500ms',
      DEVUTIL_SHUTDOWN_TIMEOUT_MS: '2s',
    });
    try {
      await waitUp(port);
      // A download that would take a minute; the deadline must not wait for it.
      const drip = get(port, '/drip?ms=60000').then(
        () => 'completed',
        (e: Error) => `cut: ${e.message}`,
      );
      await waitFor(() => log().includes('drip started'), 'the download to start');
      p.kill('SIGTERM');
      assert.equal(await exitOf(p), 1);
      assert.match(await drip, /^cut: /, 'the transfer is cut, not completed');
      assert.match(log(), /shutdown deadline: cutting/);
      assert.match(log(), /"busy":1/);
    } finally {
      if (p.exitCode === null) p.kill('SIGKILL');
    }
  });

  it('runs several workers with --workers and stops them all on SIGTERM', async () => {
    const p = await startDevutilProcess({}, ['--workers', '2'], { startTimeoutMs: 120_000 });
    try {
      // Both workers announce themselves once they listen.
      await waitFor(
        () => p.output().includes('"worker":1') && p.output().includes('"worker":2'),
        'both workers to listen',
        20_000,
      );
      const results = await Promise.all(Array.from({ length: 20 }, () => get(p.port, '/rest/api/v1/ip')));
      assert.ok(results.every((r) => r.status === 200));
      assert.equal(await p.stop(), 0);
    } finally {
      await p.kill9();
    }
  });
});
