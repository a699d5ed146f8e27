// Interop: two real Syncthing instances that can reach each other only through devutil's relay
// sync a file, verified byte-identical; the relay's HTTP endpoint, /status and /metrics report it.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Background } from '../../src/background.ts';
import { relayBackground } from '../../src/services/relay/background.ts';
import { freePort } from '../helpers/ports.ts';
import { type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { type Peer, preparePeer, rest, startPeer, stopPeer, writeConfig } from './syncthing.ts';

const SYNC_TIMEOUT_MS = 90_000;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Stats {
  numActiveSessions: number;
  numConnections: number;
  bytesProxied: number;
}

interface RelayInfo {
  status: number;
  data: { uri: string; deviceId: string; running: boolean; stats: Stats };
}

describe('real Syncthing through the relay', { skip: toolSkip('syncthing', ['--version']) }, () => {
  let server: Running;
  let bg: Background | null = null;
  let statusPort = 0;
  let info: RelayInfo;
  const peers: Peer[] = [];
  const payload = randomBytes(3 * 1024 * 1024 + 123);

  before(async () => {
    statusPort = await freePort();
    server = await startTestServer({
      overrides: {
        relay: { host: '127.0.0.1', port: await freePort(), statusPort, pingInterval: '20s' },
        log: { level: 'silent' },
      },
    });
    bg = await relayBackground.start(server.app.ctx);
    info = (await (await fetch(`${server.url}/rest/api/v1/relay`)).json()) as RelayInfo;
    const root = tempDir('devutil-syncthing-');
    const a = await preparePeer(root, 'a');
    const b = await preparePeer(root, 'b');
    peers.push(a, b);
    writeConfig(a, b, info.data.uri);
    writeConfig(b, a, info.data.uri);
    writeFileSync(join(a.folder, 'hello.bin'), payload);
    startPeer(a);
    startPeer(b);
  });

  after(async () => {
    await Promise.all(peers.map(stopPeer));
    await bg?.close();
    await server?.close();
  });

  it('serves the relay URI with the device ID at GET /rest/api/v1/relay', () => {
    assert.equal(info.status, 1);
    assert.equal(info.data.running, true);
    assert.match(info.data.uri, /^relay:\/\/127\.0\.0\.1:\d+\/\?id=([A-Z2-7]{7}-){7}[A-Z2-7]{7}$/);
    assert.ok(info.data.uri.endsWith(info.data.deviceId));
  });

  it('syncs a file between two instances whose only path is the relay', async () => {
    const [a, b] = peers as [Peer, Peer];
    const target = join(b.folder, 'hello.bin');
    const until = Date.now() + SYNC_TIMEOUT_MS;
    while (Date.now() < until) {
      if (existsSync(target) && sha(readFileSync(target)) === sha(payload)) break;
      if (a.proc?.exitCode != null || b.proc?.exitCode != null) break;
      await sleep(250);
    }
    const ok = existsSync(target) && sha(readFileSync(target)) === sha(payload);
    assert.ok(
      ok,
      `file did not arrive intact within ${SYNC_TIMEOUT_MS / 1000}s\n--- a ---\n${a.log.join('\n')}\n--- b ---\n${b.log.join('\n')}`,
    );

    type Conns = { connections: Record<string, { connected: boolean; type: string }> };
    const fromA = (await rest<Conns>(a, '/rest/system/connections')).connections[b.deviceId];
    const fromB = (await rest<Conns>(b, '/rest/system/connections')).connections[a.deviceId];
    assert.equal(fromA?.connected, true);
    assert.match(fromA?.type ?? '', /^relay-(client|server)$/);
    assert.match(fromB?.type ?? '', /^relay-(client|server)$/);
    assert.notEqual(fromA?.type, fromB?.type);
  });

  it('reports the session and the bytes in /status, the API and /metrics', async () => {
    const status = (await (await fetch(`http://127.0.0.1:${statusPort}/status`)).json()) as Stats;
    assert.ok(status.numActiveSessions >= 1, `numActiveSessions ${status.numActiveSessions}`);
    assert.ok(status.bytesProxied > payload.length, `bytesProxied ${status.bytesProxied}`);
    assert.equal(status.numConnections, 2); // both peers joined

    const api = (await (await fetch(`${server.url}/rest/api/v1/relay`)).json()) as RelayInfo;
    assert.ok(api.data.stats.bytesProxied >= status.bytesProxied);
    assert.ok(api.data.stats.numActiveSessions >= 1);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const bytes = Number(/^devutil_relay_bytes_proxied_total (\d+)/m.exec(metrics)?.[1]);
    const sessions = Number(/^devutil_relay_sessions_total (\d+)/m.exec(metrics)?.[1]);
    assert.ok(bytes > payload.length, `metric bytes ${bytes}`);
    assert.ok(sessions >= 1, `metric sessions ${sessions}`);
    assert.match(metrics, /^devutil_relay_sessions_active [1-9]/m);
  });
});
