// The relay as users run it: `devutil serve` prints the relay URI at start-up, keeps the same device
// ID across restarts of the same data directory, never logs the join token, and closes the relay
// port on SIGTERM. In cluster mode only worker 1 runs it; the other workers still answer the API.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { clientIdentity, joinRelay } from '../../src/services/relay/client.ts';
import { freePort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/devutil.js');
const URI = /relay listening: (relay:\/\/\S+)"/;

interface Started {
  proc: ChildProcess;
  uri: string;
  log: () => string;
}

async function serve(env: Record<string, string>): Promise<Started> {
  const proc = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      // No PlantUML JVMs warming up beside the relay (two per cluster run): they are not under test
      // and, on a loaded machine, pushed the relay's start-up line past the deadline below.
      DEVUTIL_DIAGRAMS_PRESTART: 'false',
      DEVUTIL_DRAIN_DELAY_MS: '0', // SIGTERM at the end stops at once
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c) => {
    out += c;
  });
  proc.stderr?.on('data', (c) => {
    out += c;
  });
  // A deadline, not a timing assertion: cluster mode starts a primary and two workers first.
  const until = Date.now() + 90_000;
  while (Date.now() < until && !URI.test(out) && proc.exitCode === null)
    await new Promise((r) => setTimeout(r, 100));
  const m = URI.exec(out);
  if (!m?.[1]) {
    proc.kill('SIGKILL');
    throw new Error(`no relay URI in the start-up log:\n${out}`);
  }
  return { proc, uri: m[1], log: () => out };
}

function stop(p: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode);
    p.once('exit', (code) => resolve(code));
    p.kill('SIGTERM');
    setTimeout(() => p.kill('SIGKILL'), 10_000).unref();
  });
}

interface RelayBody {
  data: { uri: string; running: boolean; note?: string; stats: { bytesProxied: number } };
}

/** GET on a fresh connection (no keep-alive), so cluster round-robin can pick another worker. */
function getJson(port: number, path: string): Promise<{ status: number; body: RelayBody }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let text = '';
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as RelayBody }));
    });
    req.on('error', reject);
    req.end();
  });
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

describe('relay in the devutil process', () => {
  it('prints the URI, keeps the device ID across a restart and hides the token', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const relayPort = await freePort();
    const env = {
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_PUBLIC_URL: 'https://relay.example.org',
      DEVUTIL_DATA_DIR: dataDir,
      DEVUTIL_LOG_LEVEL: 'info',
      DEVUTIL_RELAY_HOST: '127.0.0.1',
      DEVUTIL_RELAY_PORT: String(relayPort),
      DEVUTIL_RELAY_STATUS_PORT: '0',
      DEVUTIL_RELAY_TOKEN: 'tok-9f8e7d6c5b',
    };
    const first = await serve(env);
    let firstUri = '';
    try {
      firstUri = first.uri;
      assert.match(firstUri, /^relay:\/\/relay\.example\.org:\d+\/\?id=([A-Z2-7]{7}-){7}[A-Z2-7]{7}$/);
      assert.ok(firstUri.includes(`:${relayPort}/`));
      const api = await (await fetch(`http://127.0.0.1:${port}/rest/api/v1/relay`)).json();
      assert.equal(api.data.uri, firstUri);
      const j = await joinRelay('127.0.0.1', relayPort, clientIdentity(), 'tok-9f8e7d6c5b');
      assert.deepEqual(j.reply, { type: 'response', code: 0, message: 'success' });
      j.stream.close();
    } finally {
      assert.equal(await stop(first.proc), 0);
    }
    assert.equal(await portOpen(relayPort), false, 'the relay port must close on SIGTERM');
    const second = await serve(env);
    try {
      assert.equal(second.uri, firstUri);
    } finally {
      await stop(second.proc);
    }
    assert.ok(!(first.log() + second.log()).includes('tok-9f8e7d6c5b'), 'the token reached the log');
  });

  it('runs the relay once in cluster mode and answers the API from every worker', async () => {
    const port = await freePort();
    const relayPort = await freePort();
    const statusPort = await freePort();
    const s = await serve({
      DEVUTIL_PORT: String(port),
      DEVUTIL_HOST: '127.0.0.1',
      DEVUTIL_DATA_DIR: tempDir(),
      DEVUTIL_LOG_LEVEL: 'info',
      DEVUTIL_WORKERS: '2',
      DEVUTIL_RELAY_HOST: '127.0.0.1',
      DEVUTIL_RELAY_PORT: String(relayPort),
      DEVUTIL_RELAY_STATUS_PORT: String(statusPort),
    });
    try {
      // Fresh connections (no keep-alive) go round-robin over the workers once both listen; each
      // answers with the URI and live stats (worker 1 in-process, worker 2 through the status port,
      // saying so in a note).
      const notes = new Set<boolean>();
      const until = Date.now() + 60_000;
      while (notes.size < 2 && Date.now() < until) {
        const r = await getJson(port, '/rest/api/v1/relay');
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.data.uri, s.uri);
        // Worker 2 reads worker 1's status port under a 1 s deadline, which a busy machine can
        // miss (that answer says running: false, no stats): only answers with live stats count.
        if (r.body.data.running !== true) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          continue;
        }
        assert.equal(r.body.data.stats.bytesProxied, 0, 'live stats of a relay nobody used yet');
        notes.add(typeof r.body.data.note === 'string');
      }
      assert.deepEqual([...notes].sort(), [false, true], 'both workers should have answered');
      assert.equal(s.log().match(/relay listening/g)?.length, 1, 'only worker 1 may run the relay');
    } finally {
      assert.equal(await stop(s.proc), 0);
    }
  });
});
