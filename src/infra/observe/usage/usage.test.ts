import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { MemoryState } from '../../state/memory.ts';
import { TopK } from '../top-k.ts';
import { StateSink } from './sink.ts';
import { summarize } from './summary.ts';
import { MINUTE_MS, UsageRecorder } from './usage.ts';

const logger = pino({ level: 'silent' });
/** 2026-01-01T10:00:00Z: a whole hour, so minute and quarter buckets line up with the test's steps. */
const T0 = Date.UTC(2026, 0, 1, 10, 0, 0);

function recorder(capacity = 8) {
  const clock = { now: T0 };
  const usage = new UsageRecorder({
    sink: new StateSink(new MemoryState(), capacity),
    capacity,
    flushMs: 0,
    logger,
    now: () => clock.now,
  });
  return { usage, clock };
}

describe('TopK', () => {
  it('keeps at most its capacity whatever the stream, and keeps the heavy hitters with their weight', () => {
    const k = new TopK(16);
    for (let i = 0; i < 50_000; i++) {
      k.add(`10.0.${i >> 8}.${i & 255}`, 100);
      if (i % 10 === 0) k.add('heavy-a', 1000);
      if (i % 20 === 0) k.add('heavy-b', 1000);
    }
    assert.equal(k.size, 16);
    const top = k.entries(2);
    assert.deepEqual(
      top.map((e) => e.key),
      ['heavy-a', 'heavy-b'],
    );
    // Space-saving never underestimates a key it holds.
    assert.ok((top[0]?.weight ?? 0) >= 5000 * 1000);
    assert.ok((top[1]?.weight ?? 0) >= 2500 * 1000);
  });

  it('counts exactly while it has room', () => {
    const k = new TopK(4);
    k.add('a', 5);
    k.add('b', 7, 2);
    k.add('a', 5);
    assert.deepEqual(k.entries(), [
      { key: 'a', weight: 10, count: 2 },
      { key: 'b', weight: 7, count: 2 },
    ]);
  });
});

describe('UsageRecorder with the state sink (memory)', () => {
  it('places requests in the minute they happened and keeps them for an hour, then only in the day', async () => {
    const { usage, clock } = recorder();
    usage.record('files', '192.0.2.1', 201, 5000, 300);
    clock.now = T0 + 30 * MINUTE_MS + 5000;
    usage.record('proxy', '192.0.2.2', 200, 200, 70_000);
    usage.record('proxy', '192.0.2.2', 502, 200, 100);

    let hour = summarize('hour', await usage.read('hour'), 10);
    assert.equal(hour.series.length, 60);
    assert.equal(hour.stepSeconds, 60);
    assert.deepEqual(hour.totals, { requests: 3, errors: 1, bytesIn: 5400, bytesOut: 70_400 });
    // The last point is the current minute (T0+30), the upload is 30 points before it.
    assert.equal(hour.series[59]?.requests, 2);
    assert.equal(hour.series[59]?.t, T0 + 30 * MINUTE_MS);
    assert.equal(hour.series[29]?.requests, 1);
    assert.equal(hour.series[29]?.t, T0);
    assert.deepEqual(
      hour.utilities.map((u) => [u.name, u.requests, u.errors]),
      [
        ['proxy', 2, 1],
        ['files', 1, 0],
      ],
    );
    assert.deepEqual(hour.top.clientBytes[0], { key: '192.0.2.2', requests: 2, bytes: 70_500 });

    clock.now = T0 + 75 * MINUTE_MS;
    hour = summarize('hour', await usage.read('hour'), 10);
    assert.deepEqual(hour.totals, { requests: 2, errors: 1, bytesIn: 400, bytesOut: 70_100 });
    const day = summarize('day', await usage.read('day'), 10);
    assert.equal(day.series.length, 96);
    assert.equal(day.stepSeconds, 900);
    assert.equal(day.totals.requests, 3);
    // 10:00 and 10:30 fall in two different quarter hours.
    assert.deepEqual(
      day.series.filter((p) => p.requests).map((p) => [p.t, p.requests]),
      [
        [T0, 1],
        [T0 + 30 * MINUTE_MS, 2],
      ],
    );

    clock.now = T0 + 25 * 3_600_000;
    assert.equal(summarize('day', await usage.read('day'), 10).totals.requests, 0);
  });

  it('adds up several flushes of the same minute', async () => {
    const { usage, clock } = recorder();
    usage.record('ip', '198.51.100.7', 200, 10, 20);
    await usage.flush();
    clock.now += 1000;
    usage.record('ip', '198.51.100.7', 200, 10, 20);
    await usage.flush();
    const s = summarize('hour', await usage.read('hour'), 10);
    assert.deepEqual(s.top.clientRequests, [{ key: '198.51.100.7', requests: 2 }]);
    assert.equal(s.series[59]?.requests, 2);
  });

  it('stays bounded with a new client address on every request, and still ranks the heavy client first', async () => {
    const capacity = 8;
    const { usage, clock } = recorder(capacity);
    for (let m = 0; m < 3; m++) {
      for (let i = 0; i < 20_000; i++) {
        usage.record('ip', `2001:db8::${m}:${i.toString(16)}`, 200, 100, 200);
        if (i % 50 === 0) usage.record('ip', '203.0.113.9', 200, 100, 5000);
      }
      await usage.flush();
      clock.now += MINUTE_MS;
    }
    const read = await usage.read('hour');
    for (const b of read.buckets) for (const t of Object.values(b.tops)) assert.ok(t.size <= capacity);
    const s = summarize('hour', read, 5);
    assert.equal(s.top.clientBytes.length, 5);
    assert.equal(s.top.clientBytes[0]?.key, '203.0.113.9');
    assert.equal(s.top.clientRequests.length, 5);
    assert.equal(s.totals.requests, 3 * (20_000 + 400));
  });

  it('counts the growth of probe counters and reports the latest gauges', async () => {
    const { usage, clock } = recorder();
    let hits = 5; // before the first flush: counted, the counters start with the process
    usage.setProbes({
      counters: () => ({ 'cache:proxy:hit': hits }),
      gauges: () => ({ 'queue:plantuml': 3 }),
    });
    await usage.flush();
    hits = 12;
    clock.now += 2 * MINUTE_MS;
    await usage.flush();
    hits = 4; // reset (a restarted component): all of it is new
    await usage.flush();
    const s = summarize('hour', await usage.read('hour'), 10);
    assert.equal(s.counters['cache:proxy:hit'], 5 + 7 + 4);
    assert.equal(s.series[57]?.t, T0);
    assert.deepEqual(s.gauges, { 'queue:plantuml': 3 });
  });

  it('ranks only served requests in the proxied tables, and counts the failed ones as errors', async () => {
    const { usage } = recorder();
    const served = { repo: 'o/r', package: 'npm/served', file: 'npm/served/served-1.0.0.tgz' };
    usage.record('proxy', '192.0.2.1', 200, 100, 5000, served);
    usage.record('proxy', '192.0.2.1', 304, 100, 50, served);
    usage.record('proxy', '192.0.2.1', 403, 100, 90_000, { package: 'npm/refused' });
    usage.record('proxy', '192.0.2.1', 404, 100, 80_000, { repo: 'o/gone', file: 'github.com/o/gone/x.bin' });
    usage.record('proxy', '192.0.2.1', 502, 100, 70_000, { package: 'pypi/down' });
    const s = summarize('hour', await usage.read('hour'), 10);
    assert.deepEqual(s.top.package, [{ key: 'npm/served', requests: 2, bytes: 5250 }]);
    assert.deepEqual(s.top.repo, [{ key: 'o/r', requests: 2, bytes: 5250 }]);
    assert.deepEqual(
      s.top.file.map((r) => r.key),
      ['npm/served/served-1.0.0.tgz'],
    );
    assert.deepEqual(
      s.utilities.map((u) => [u.name, u.requests, u.errors]),
      [['proxy', 5, 3]],
    );
  });

  it('cuts long keys so one entry cannot hold much memory', async () => {
    const { usage } = recorder();
    usage.record('proxy', '192.0.2.1', 200, 1, 1, { file: `github.com/${'a'.repeat(5000)}.bin` });
    const s = summarize('hour', await usage.read('hour'), 10);
    assert.equal(s.top.file[0]?.key.length, 200);
  });
});
