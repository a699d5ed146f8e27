// Proxy byte budgets with real clients: once 127.0.0.1 has pulled its budget, its next request gets
// 429 with Retry-After (the seconds until its window ends) in the proxy's text envelope while
// 127.0.0.2 is still served; two devutil instances (one a process of its own) on one Redis share it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';
import { type RedisHandle, startRedis } from '../helpers/redis.ts';
import type { Running } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const BUDGET = '500KiB/day'; // the 300 000-byte asset fits once, and the second download crosses it
const ASSET = '/proxy/github.com/o/r/releases/download/v1/asset.bin';

function secondsToUtcMidnight(): number {
  const now = Date.now();
  const d = new Date(now);
  return Math.ceil((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - now) / 1000);
}

async function metric(base: string, series: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : Number.NaN;
}

function assertRefused(r: Awaited<ReturnType<typeof curl>>): void {
  assert.equal(r.status, 429);
  const retry = Number(r.headers['retry-after']);
  // The window is the UTC day: the client may retry when it ends, not before.
  assert.ok(Math.abs(retry - secondsToUtcMidnight()) <= 5, `retry-after ${retry}`);
  assert.match(r.headers['content-type'] ?? '', /^text\/plain/);
  assert.equal(
    r.body.toString(),
    `your address has used its proxy byte budget (500 KiB per day); retry in ${retry}s\n`,
  );
}

describe('proxy byte budget on one instance', { skip: toolSkip('curl') }, () => {
  let w: World;
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { clientBytes: BUDGET } } });
  });
  after(() => w?.close());

  it('answers 429 with Retry-After once a client has pulled its budget, and serves another client', async () => {
    const url = `${w.proxy.url}${ASSET}`;
    const first = await curl([url]);
    assert.equal(first.status, 200);
    assert.ok(first.body.equals(w.asset));
    const second = await curl([url]);
    assert.equal(second.status, 200, 'a transfer that crosses the budget still finishes');
    assert.equal(second.body.length, w.asset.length);

    assertRefused(await curl([url]));
    const other = await curl(['--interface', '127.0.0.2', url]);
    assert.equal(other.status, 200);
    assert.ok(other.body.equals(w.asset));

    assert.equal(await metric(w.proxy.url, 'devutil_budget_refused_total{budget="proxy",scope="client"}'), 1);
    assert.equal(
      await metric(w.proxy.url, 'devutil_budget_charged_bytes_total{budget="proxy"}'),
      3 * w.asset.length,
    );
    assert.equal(
      await metric(w.proxy.url, 'devutil_budget_limit_bytes{budget="proxy",scope="client"}'),
      512_000,
    );
  });
});

// Acceptance (issue 23, item 6): the budget is charged while the bytes flow, so one request against
// an upstream that never ends is cut near the budget (byte-budget.ts CUT_MARGIN plus one batch), and
// the client's next request is refused.
describe('proxy byte budget against an endless upstream', { skip: toolSkip('curl') }, () => {
  const MiB = 1024 * 1024;
  let w: World;
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { clientBytes: '8MiB/day' } } });
  });
  after(() => w?.close());

  it('cuts one endless download near the budget, then answers 429 with Retry-After', async () => {
    const r = await curl(['--max-time', '120', `${w.proxy.url}/proxy/github.com/o/r/raw/main/endless`]);
    assert.equal(r.status, 200);
    assert.notEqual(r.exit, 0, 'the transfer was cut, not finished');
    assert.notEqual(r.exit, 28, 'cut by the budget, not by the client timeout');
    assert.ok(r.body.length >= 8 * MiB, `cut before the budget: ${r.body.length}`);
    assert.ok(r.body.length <= 8 * MiB + 3 * MiB, `cut too late: ${r.body.length} bytes`);
    const next = await curl([`${w.proxy.url}${ASSET}`]);
    assert.equal(next.status, 429);
    assert.ok(Number(next.headers['retry-after']) >= 1);
    assert.equal((await curl(['--interface', '127.0.0.2', `${w.proxy.url}${ASSET}`])).status, 200);
  });
});

// Instance A runs in this process and B is a `devutil serve` process of its own: B can only know
// what A charged through Redis (one child process fewer than two, the same proof).
describe('proxy byte budget shared by two instances through Redis', {
  skip: toolSkip('curl') || toolSkip('redis-server'),
}, () => {
  let w: World;
  let redis: RedisHandle;
  let a: Running;
  let b: DevutilProcess;
  // after() stops whatever came up when a later start fails.
  before(async () => {
    redis = await startRedis();
    w = await startWorld({
      git: false,
      overrides: { redis: { url: redis.url }, proxy: { clientBytes: BUDGET, totalBytes: '1GiB/month' } },
    });
    a = w.proxy;
    b = await startDevutilProcess({
      DEVUTIL_REDIS_URL: redis.url,
      DEVUTIL_PROXY_RESOLVE: w.net.resolve.join(','),
      DEVUTIL_PROXY_UPSTREAM_CA: w.net.caFile,
      DEVUTIL_PROXY_CLIENT_BYTES: BUDGET,
      DEVUTIL_PROXY_TOTAL_BYTES: '1GiB/month',
    });
  });
  after(async () => {
    await b?.stop();
    await w?.close();
    await redis?.stop();
  });

  it('refuses on one instance the client that spent its budget on the other', async () => {
    assert.equal((await curl([`${a.url}${ASSET}`])).status, 200);
    assert.equal((await curl([`${a.url}${ASSET}`])).status, 200);
    // The last charge of a transfer is written as it ends; wait until B can see it in Redis.
    const used = 'devutil_budget_used_bytes{budget="proxy"}';
    for (let i = 0; i < 100 && !((await metric(b.url, used)) >= 2 * w.asset.length); i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(await metric(b.url, used), 2 * w.asset.length);

    assertRefused(await curl([`${b.url}${ASSET}`]));
    assert.equal((await curl(['--interface', '127.0.0.2', `${b.url}${ASSET}`])).status, 200);
    assert.equal((await curl(['--interface', '127.0.0.2', `${a.url}${ASSET}`])).status, 200);
  });
});
