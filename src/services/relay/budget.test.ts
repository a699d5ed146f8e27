// Relay byte budgets over the raw protocol: once a client address has relayed its budget, its new
// sessions are refused with a response code while other addresses still get theirs; a spent total
// refuses joins with RelayFull; /status shows the budget; two relays on one Redis share it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { freePort } from '../../../test/helpers/ports.ts';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { testRelaySettings } from '../../../test/helpers/relay.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { budget } from '../../infra/config/schema.ts';
import { ByteBudget } from '../../infra/limits/byte-budget.ts';
import { MemoryState } from '../../infra/state/memory.ts';
import { RedisState } from '../../infra/state/redis-state.ts';
import type { SharedState } from '../../infra/state/state.ts';
import {
  type ClientIdentity,
  clientIdentity,
  joinRelay,
  joinSession,
  type MessageStream,
  requestSession,
} from './client.ts';
import { loadOrCreateIdentity } from './identity.ts';
import { Relay, type RelaySettings } from './relay.ts';

const H = '127.0.0.1';
const logger = pino({ level: 'silent' });
const KiB = 1024;

function spec(s: string) {
  const r = budget('off', { doc: '' }).parse(s);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

function makeBudget(client: string, total: string, state: SharedState = new MemoryState()) {
  return new ByteBudget('relay', {
    client: spec(client),
    total: spec(total),
    state,
    failMode: 'closed',
    logger,
  });
}

async function startRelay(b: ByteBudget, o: Partial<RelaySettings> = {}): Promise<Relay> {
  const settings = testRelaySettings(o);
  return Relay.start(settings, loadOrCreateIdentity(tempDir()), logger, {}, b);
}

interface Device {
  id: ClientIdentity;
  stream: MessageStream;
  from: string;
}

async function join(relay: Relay, from: string): Promise<Device> {
  const id = clientIdentity();
  const j = await joinRelay(H, relay.port, id, '', from);
  assert.deepEqual(j.reply, { type: 'response', code: 0, message: 'success' });
  return { id, stream: j.stream, from };
}

/** `b` asks for a session with `a`, both join it and `b` sends `bytes` to `a`; then both hang up. */
async function relayBytes(relay: Relay, a: Device, b: Device, bytes: number): Promise<void> {
  const inv = await requestSession(H, relay.port, b.id, a.id.raw, b.from);
  assert.equal(inv.type, 'sessionInvitation', JSON.stringify(inv));
  const server = await a.stream.next();
  assert.equal(server.type, 'sessionInvitation');
  if (inv.type !== 'sessionInvitation' || server.type !== 'sessionInvitation') return;
  const sa = await joinSession(H, relay.port, server.key, a.from);
  const sb = await joinSession(H, relay.port, inv.key, b.from);
  await new Promise<void>((resolve) => {
    let got = 0;
    sa.on('data', (c: Buffer) => {
      got += c.length;
      if (got >= bytes) resolve();
    });
    sa.resume();
    sb.write(randomBytes(bytes));
  });
  await hangUp(relay, sa, sb);
}

async function hangUp(relay: Relay, ...socks: Socket[]): Promise<void> {
  for (const s of socks) s.destroy();
  // The relay charges a session's last bytes when it closes it.
  while (relay.sessions.activeSessions > 0) await new Promise((r) => setTimeout(r, 10));
}

describe('relay byte budget per client', () => {
  let relay: Relay;
  let b: ByteBudget;
  const devices: Device[] = [];
  before(async () => {
    b = makeBudget('200KiB/day', '10MiB/month');
    relay = await startRelay(b, { statusPort: await freePort() });
  });
  after(async () => {
    for (const d of devices) d.stream.close();
    await relay?.close();
  });

  it('refuses a new session once an address has relayed its budget, and serves other addresses', async () => {
    const a = await join(relay, '127.0.0.1');
    const c = await join(relay, '127.0.0.2');
    devices.push(a, c);
    const b1 = { ...a, id: clientIdentity() };
    await relayBytes(relay, a, b1, 150 * KiB); // under the budget: allowed
    await relayBytes(relay, a, b1, 150 * KiB); // crosses it: still allowed to finish
    const refused = await requestSession(H, relay.port, b1.id, a.id.raw, '127.0.0.1');
    assert.deepEqual(refused, { type: 'response', code: 429, message: 'byte budget spent' });

    // 127.0.0.2 has its own budget: a session among its devices still works.
    const d = { ...c, id: clientIdentity() };
    await relayBytes(relay, c, d, 10 * KiB);
    // But a session from 127.0.0.2 to the spent address is refused: both ends pay for a session.
    const toSpent = await requestSession(H, relay.port, d.id, a.id.raw, '127.0.0.2');
    assert.deepEqual(toSpent, { type: 'response', code: 429, message: 'byte budget spent' });
    // And the spent address cannot join again either.
    const again = await joinRelay(H, relay.port, clientIdentity(), '', '127.0.0.1');
    assert.deepEqual(again.reply, { type: 'relayFull' });
  });

  it('shows the budget in /status', async () => {
    const st = (await (await fetch(`http://${H}:${relay.statusPort}/status`)).json()) as {
      byteBudget: Record<string, unknown>;
    };
    assert.equal(st.byteBudget['client'], '200KiB/day');
    assert.equal(st.byteBudget['total'], '10MiB/month');
    assert.equal(st.byteBudget['totalUsedBytes'], 310 * KiB);
    assert.equal(st.byteBudget['refusedClient'], 3);
    assert.ok(Number(st.byteBudget['totalResetsInSeconds']) > 0);
  });
});

describe('relay byte budget in total', () => {
  it('refuses joins with RelayFull and sessions with a response code once the total is spent', async () => {
    const b = makeBudget('off', '100KiB/day');
    const relay = await startRelay(b);
    const a = await join(relay, '127.0.0.1');
    const c = await join(relay, '127.0.0.3');
    try {
      await relayBytes(relay, a, { ...c, id: clientIdentity() }, 120 * KiB);
      const late = await joinRelay(H, relay.port, clientIdentity(), '', '127.0.0.4');
      assert.deepEqual(late.reply, { type: 'relayFull' });
      const s = await requestSession(H, relay.port, clientIdentity(), c.id.raw, '127.0.0.5');
      assert.deepEqual(s, { type: 'response', code: 429, message: 'byte budget spent' });
      assert.equal(b.refused.total, 2);
    } finally {
      a.stream.close();
      c.stream.close();
      await relay.close();
    }
  });
});

describe('relay byte budget shared through Redis', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const conns: Redis[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await redis?.stop();
  });

  it('refuses on one relay what was spent on another', async () => {
    const store = () => {
      const c = new Redis(redis.url);
      conns.push(c);
      return new RedisState(c, 'relaytest:');
    };
    const b1 = makeBudget('100KiB/day', 'off', store());
    const b2 = makeBudget('100KiB/day', 'off', store());
    const r1 = await startRelay(b1);
    const r2 = await startRelay(b2);
    const a1 = await join(r1, '127.0.0.1');
    const a2 = await join(r2, '127.0.0.2');
    try {
      await relayBytes(r1, a1, { ...a1, id: clientIdentity() }, 120 * KiB);
      await b1.flush();
      // 127.0.0.1 spent its budget on r1: on r2 it can neither open a session nor join.
      const s = await requestSession(H, r2.port, clientIdentity(), a2.id.raw, '127.0.0.1');
      assert.deepEqual(s, { type: 'response', code: 429, message: 'byte budget spent' });
      const j = await joinRelay(H, r2.port, clientIdentity(), '', '127.0.0.1');
      assert.deepEqual(j.reply, { type: 'relayFull' });
    } finally {
      a1.stream.close();
      a2.stream.close();
      await Promise.all([r1.close(), r2.close()]);
    }
  });
});
