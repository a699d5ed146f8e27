// Byte budgets: parsing (sizes and windows), UTC window boundaries, per-client and total counting in
// memory and on a real Redis shared by two counters, and start-up refusing bad values by name.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { type RedisHandle, startRedis } from '../../../test/helpers/redis.ts';
import { tempDir } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';
import { ConfigError, loadConfig } from '../../config.ts';
import { type Budget, budget } from '../config/schema.ts';
import { MemoryState } from '../state/memory.ts';
import { RedisState } from '../state/redis-state.ts';
import type { SharedState } from '../state/state.ts';
import { ByteBudget, windowOf } from './byte-budget.ts';

const GiB = 1024 ** 3;
const logger = pino({ level: 'silent' });
const parse = (s: unknown) => budget('off', { doc: '' }).parse(s);
const spec = (s: string): Budget => {
  const r = parse(s);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe('byte budget values', () => {
  const good: [unknown, number, number, Budget['unit']][] = [
    ['20GiB/day', 20 * GiB, 1, 'day'],
    ['3TiB/month', 3 * 1024 * GiB, 1, 'month'],
    ['3 TiB / month', 3 * 1024 * GiB, 1, 'month'],
    ['500MiB/12h', 500 * 1024 ** 2, 12, 'hour'],
    ['1.5G/week', 1.5 * GiB, 1, 'week'],
    ['1048576/hour', 1024 ** 2, 1, 'hour'],
    ['10kb/30min', 10 * 1024, 30, 'minute'],
    ['2GB/2days', 2 * GiB, 2, 'day'],
    ['1m/10s', 1024 ** 2, 10, 'second'],
    ['5G/3mo', 5 * GiB, 3, 'month'],
  ];
  for (const [raw, bytes, count, unit] of good) {
    it(`reads ${JSON.stringify(raw)}`, () => {
      const r = parse(raw);
      assert.ok(r.ok, r.ok ? '' : r.error);
      assert.deepEqual([r.value.bytes, r.value.count, r.value.unit], [bytes, count, unit]);
    });
  }

  for (const raw of ['', 'off', '0', 'none', 'OFF', 0]) {
    it(`reads ${JSON.stringify(raw)} as no budget`, () => {
      const r = parse(raw);
      assert.ok(r.ok);
      assert.equal(r.value.bytes, 0);
    });
  }

  const bad: [unknown, RegExp][] = [
    ['20GiB', /expected a budget like/],
    ['20GiB/m', /expected a budget like/], // minute or month?
    ['20GiB/fortnight', /expected a budget like/],
    ['20XB/day', /expected a size/],
    ['-1GiB/day', /expected a size/],
    ['0GiB/day', /below the minimum of 1 byte/],
    ['1GiB/0day', /window count/],
    ['1GiB/5000h', /window count/],
    ['99999999TiB/day', /size out of range/],
    [{ bytes: 1 }, /expected a budget/],
    [12, /expected a budget/],
  ];
  for (const [raw, msg] of bad) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      const r = parse(raw);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, msg);
    });
  }

  it('refuses bad budgets at load time, naming each variable', () => {
    const env = {
      DEVUTIL_PROXY_CLIENT_BYTES: '20GiB/fortnight',
      DEVUTIL_PROXY_TOTAL_BYTES: 'lots',
      DEVUTIL_RELAY_CLIENT_BYTES: '1GiB/0d',
      DEVUTIL_RELAY_TOTAL_BYTES: '3TiB',
    };
    assert.throws(
      () => loadConfig({ env }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        for (const name of Object.keys(env))
          assert.ok(
            e.problems.some((p) => p.startsWith(`${name}:`)),
            `${name} not named in ${e.problems}`,
          );
        return true;
      },
    );
    const ok = loadConfig({ env: { DEVUTIL_PROXY_TOTAL_BYTES: '3TiB/month' } }).config;
    assert.equal(ok.proxy.totalBytes.bytes, 3 * 1024 * GiB);
  });

  it('stops `devutil serve` with a bad budget and names the variable', async () => {
    const bin = join(new URL('../../..', import.meta.url).pathname, 'bin/devutil.js');
    const env = {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      DEVUTIL_DATA_DIR: tempDir(),
      DEVUTIL_RELAY_TOTAL_BYTES: '3TiB/fortnight',
    };
    const err = await promisify(execFile)(process.execPath, [bin, 'serve'], { env }).then(
      () => assert.fail('expected a non-zero exit'),
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(err.code, 78);
    assert.match(err.stderr, /DEVUTIL_RELAY_TOTAL_BYTES: expected a budget like/);
  });
});

describe('budget windows', () => {
  const at = (iso: string) => Date.parse(iso);
  const cases: [string, string, string][] = [
    ['1GiB/day', '2026-11-21T13:45:00Z', '2026-11-22T00:00:00Z'],
    ['1GiB/hour', '2026-11-21T13:45:00Z', '2026-11-21T14:00:00Z'],
    ['1GiB/12h', '2026-11-21T13:45:00Z', '2026-11-22T00:00:00Z'],
    ['1GiB/12h', '2026-11-21T11:59:59Z', '2026-11-21T12:00:00Z'],
    ['1GiB/week', '2026-11-21T13:45:00Z', '2026-11-23T00:00:00Z'], // a Saturday; weeks end on Sunday night
    ['1GiB/week', '2026-11-23T00:00:00Z', '2026-11-30T00:00:00Z'],
    ['1GiB/month', '2026-11-21T13:45:00Z', '2026-12-01T00:00:00Z'],
    ['1GiB/month', '2026-12-31T23:59:59Z', '2027-01-01T00:00:00Z'],
    ['1GiB/month', '2028-02-10T00:00:00Z', '2028-03-01T00:00:00Z'],
    ['1GiB/3month', '2026-11-21T13:45:00Z', '2027-01-01T00:00:00Z'],
  ];
  for (const [s, now, end] of cases) {
    it(`${s} at ${now} ends at ${end}`, () => {
      assert.equal(new Date(windowOf(spec(s), at(now)).endMs).toISOString(), new Date(end).toISOString());
    });
  }

  it('gives the next window a new id', () => {
    const b = spec('1GiB/month');
    assert.notEqual(windowOf(b, at('2026-11-30T23:59:59Z')).id, windowOf(b, at('2026-12-01T00:00:00Z')).id);
    assert.equal(windowOf(b, at('2026-11-01T00:00:00Z')).id, windowOf(b, at('2026-11-30T23:59:59Z')).id);
  });
});

function counter(state: SharedState, client: string, total: string) {
  return new ByteBudget('test', {
    client: spec(client),
    total: spec(total),
    state,
    failMode: 'closed',
    logger,
  });
}

describe('byte budget counting (memory)', () => {
  it('refuses a client once its bytes reach the budget, with the seconds left in the window', async () => {
    const b = counter(new MemoryState(), '1000/day', 'off');
    const now = Date.parse('2026-11-21T23:00:00Z');
    assert.equal((await b.check('127.0.0.1', now)).allowed, true);
    b.charge('127.0.0.1', 999, now);
    assert.equal((await b.check('127.0.0.1', now)).allowed, true, 'one byte left');
    b.charge('127.0.0.1', 5000, now); // a transfer may cross the line
    const d = await b.check('127.0.0.1', now);
    assert.deepEqual(d, { allowed: false, scope: 'client', retryAfterSec: 3600 });
    assert.equal((await b.check('127.0.0.2', now)).allowed, true, 'another client is not charged');
    assert.equal((await b.check('127.0.0.1', now + 3600_000)).allowed, true, 'the next day starts afresh');
    assert.equal(b.refused.client, 1);
    await b.close();
  });

  it('charges each window its own bytes, whatever order the times come in', async () => {
    const b = counter(new MemoryState(), '1000/day', 'off');
    const day2 = Date.parse('2026-11-22T12:00:00Z');
    const day1 = day2 - 86_400_000;
    b.charge('127.0.0.1', 1000, day2);
    assert.equal((await b.check('127.0.0.1', day2)).allowed, false);
    assert.equal((await b.check('127.0.0.1', day1)).allowed, true, 'the day before is not charged');
    assert.equal(b.admitsNow('127.0.0.1', day1), true);
    b.charge('127.0.0.1', 1000, day1);
    assert.equal(b.admitsNow('127.0.0.1', day1), false);
    assert.equal((await b.check('127.0.0.1', day2 + 3600_000)).allowed, false, 'later the same day');
    assert.equal((await b.check('127.0.0.1', day2 + 86_400_000)).allowed, true, 'the next day');
    await b.close();
  });

  it('counts an IPv6 /64 as one client', async () => {
    const b = counter(new MemoryState(), '1000/day', 'off');
    b.charge('2001:db8:1:2::1', 1000);
    assert.equal((await b.check('2001:db8:1:2:ffff::9')).allowed, false);
    assert.equal((await b.check('2001:db8:1:3::1')).allowed, true);
    await b.close();
  });

  it('refuses everyone once the total is spent, and says which budget', async () => {
    const b = counter(new MemoryState(), '1000/day', '1500/month');
    b.charge('10.0.0.1', 800);
    b.charge('10.0.0.2', 800);
    const d = await b.check('10.0.0.3');
    assert.equal(d.allowed, false);
    assert.equal(d.scope, 'total');
    assert.match(
      b.reason(d),
      /the test byte budget \(1\.46 KiB \(1500 bytes\) per month\) is spent; retry in \d+s/,
    );
    assert.equal(b.usage()?.used, 1600);
    await b.close();
  });

  it('charges both ends of a relay session once each, and the total once', async () => {
    const b = counter(new MemoryState(), '1000/day', '1500/day');
    b.charge(['10.0.0.1', '10.0.0.2'], 1000);
    assert.equal((await b.check('10.0.0.1')).allowed, false);
    assert.equal((await b.check('10.0.0.2')).allowed, false);
    assert.equal(b.usage()?.used, 1000);
    b.charge(['10.0.0.3', '10.0.0.3'], 400); // both devices behind one address
    assert.equal((await b.check('10.0.0.3')).allowed, true);
    await b.close();
  });

  it('counts bytes whose write to the store is still on its way', async () => {
    // A store whose writes wait for a gate: a check made during a flush must still see the bytes.
    const state = new MemoryState();
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const countMany = state.countMany.bind(state);
    state.countMany = async (entries) => {
      await gate;
      return countMany(entries);
    };
    const b = counter(state, '1000/day', '5000/day');
    b.charge('10.0.0.1', 1000);
    const flushing = b.flush();
    assert.equal((await b.check('10.0.0.1')).allowed, false, 'refused while the write is in flight');
    assert.equal(b.usage()?.used, 1000);
    open();
    await flushing;
    assert.equal((await b.check('10.0.0.1')).allowed, false, 'and after it landed');
    assert.equal(b.usage()?.used, 1000, 'counted once');
    assert.equal((await b.check('10.0.0.2')).allowed, true);
    await b.close();
  });
});

describe('byte budget counting (Redis)', { skip: toolSkip('redis-server') }, () => {
  let redis: RedisHandle;
  const conns: Redis[] = [];
  const connect = () => {
    const c = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    conns.push(c);
    return c;
  };
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of conns) c.disconnect();
    await redis?.stop();
  });

  it('shares one budget between two instances', async () => {
    const a = counter(new RedisState(connect(), 'i1:'), '1000/day', '5000/month');
    const b = counter(new RedisState(connect(), 'i1:'), '1000/day', '5000/month');
    a.charge('127.0.0.1', 600);
    await a.flush();
    assert.equal((await b.check('127.0.0.1')).allowed, true);
    b.charge('127.0.0.1', 600);
    await b.flush();
    const d = await a.check('127.0.0.1');
    assert.equal(d.allowed, false);
    assert.equal(d.scope, 'client');
    await b.refresh();
    assert.equal(b.usage()?.used, 1200);
    await Promise.all([a.close(), b.close()]);
  });

  it('expires its keys at the end of the window', async () => {
    const c = connect();
    const a = counter(new RedisState(c, 'i2:'), '1000/hour', 'off');
    a.charge('127.0.0.1', 10);
    await a.flush();
    const keys = await c.keys('i2:c:*');
    assert.equal(keys.length, 1);
    const ttl = await c.pttl(keys[0] ?? '');
    assert.ok(ttl > 0 && ttl <= 3600_000 + 120_000, `ttl ${ttl}`);
    await a.close();
  });

  it('keeps charges made while Redis is down and writes them once it is back', async () => {
    const c = new Redis(redis.url, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: 500,
    });
    conns.push(c);
    const a = counter(new RedisState(c, 'i3:'), '1000/day', 'off');
    await redis.stop();
    a.charge('127.0.0.1', 700);
    await a.flush(); // fails, keeps the bytes
    await assert.rejects(a.check('127.0.0.1'), /byte budget store unavailable/, 'closed fail mode');
    await redis.restart();
    for (let i = 0; i < 50 && c.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 100));
    a.charge('127.0.0.1', 300);
    await a.flush();
    const fresh = counter(new RedisState(connect(), 'i3:'), '1000/day', 'off');
    assert.equal((await fresh.check('127.0.0.1')).allowed, false, '700 + 300 reached Redis');
    await Promise.all([a.close(), fresh.close()]);
  });
});
