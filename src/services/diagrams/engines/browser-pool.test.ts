// The headless-browser pool with real Chromium and pages of our own: a render past the deadline
// (an endless loop) is answered by a timeout and its page's renderer process is gone, the pool goes
// on; two page kinds share one browser (at the page cap, an idle page of one kind gives way to the
// other) and a runaway page of one kind holds up no render of the other; a page's requests go
// nowhere (a loopback server of the test sees none); a browser killed under a render is replaced and
// the render goes once more; idle browsers exit (the pages' files released with the last); close()
// leaves no process. Chromium is required when CI=true.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { chromiumProcesses, profileRoot, startTrap, type Trap } from '../../../../test/helpers/chromium.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { BrowserPool, type BrowserPoolOptions } from './browser-pool.ts';
import { findChromium } from './find-chromium.ts';
import type { PageKind } from './page-kind.ts';
import { RenderTimeout } from './render-job.ts';

// What the server finds by itself (a headless shell first, find-chromium.ts).
const CHROMIUM = findChromium() ?? '/usr/bin/chromium';
const skip = toolSkip(CHROMIUM, ['--version']);

/** A page whose render function does what the source says: echo, loop, fetch a URL. */
function testPage(name = 'test'): PageKind {
  const files = new Map([
    ['/', { type: 'text/html', body: Buffer.from('<!doctype html><title>t</title><body></body>') }],
  ]);
  return {
    name,
    origin: `http://devutil-${name}.invalid`,
    files: () => files,
    // Permissive on purpose: the requests must meet the pool's interception, not the page's CSP.
    csp: 'default-src * data: blob:',
    setup: `globalThis.__devutilRender = async (source) => {
      if (source === 'loop') for (;;) {}
      if (source.startsWith('sleep ')) await new Promise((r) => setTimeout(r, Number(source.slice(6))));
      if (source.startsWith('fetch ')) {
        const url = source.slice(6);
        const tries = await Promise.allSettled([
          fetch(url),
          new Promise((ok, no) => { const i = new Image(); i.onload = ok; i.onerror = no; i.src = url + '?img'; }),
          new Promise((ok, no) => { const s = new WebSocket(url.replace('http', 'ws')); s.onopen = ok; s.onerror = no; }),
        ]);
        return { ok: true, svg: '<svg>' + tries.map((t) => t.status).join(',') + '</svg>' };
      }
      return { ok: true, svg: '<svg><text>' + location.hostname + ' ' + source + '</text></svg>' };
    }; true`,
  };
}

const A = testPage();
const B = testPage('other');
const drawn = (kind: PageKind, source: string) => ({
  ok: true,
  body: `<svg><text>${new URL(kind.origin).hostname} ${source}</text></svg>`,
});

describe('browser pool (real Chromium)', { skip, timeout: 240_000 }, () => {
  const events: string[] = [];
  const pools: BrowserPool[] = [];
  const make = (o: Partial<BrowserPoolOptions> = {}) => {
    const pool = new BrowserPool({
      executable: CHROMIUM,
      browsers: 1,
      pages: 2,
      timeoutMs: 20_000,
      startTimeoutMs: 60_000,
      idleMs: 0,
      heapMb: 128,
      recycleAfter: 100,
      maxOutput: 1 << 20,
      onEvent: (e) => events.push(e),
      profileRoot: profileRoot(),
      ...o,
    });
    pools.push(pool);
    return pool;
  };
  let trap: Trap;
  before(async () => {
    trap = await startTrap();
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    trap?.close();
  });

  it('renders, and a render past the deadline times out without taking the pool down', async () => {
    const root = profileRoot();
    const pool = make({ timeoutMs: 1500, profileRoot: root });
    const first = await pool.run(A, 'hello');
    assert.deepEqual(first, drawn(A, 'hello'));
    const renderers = () => chromiumProcesses(root).filter((p) => p.type === 'renderer').length;
    const before = renderers();
    await assert.rejects(pool.run(A, 'loop'), RenderTimeout);
    assert.ok(events.includes('timeout'));
    // The looping page's renderer process is gone (crashed and closed), not left spinning.
    await waitFor(() => renderers() < before, 'the looping renderer to exit');
    assert.deepEqual(await pool.run(A, 'again'), drawn(A, 'again'));
    await pool.close();
    assert.deepEqual(chromiumProcesses(root), [], 'no Chromium process after close()');
  });

  it('gives two pages of one kind a renderer process each: one spinning holds up no render on the other', async () => {
    // The pages are tabs of one window (browser-page.ts): were they in one renderer process, the
    // second render would wait for the loop's deadline on the same main thread.
    const pool = make({ timeoutMs: 20_000 });
    await Promise.all([pool.run(A, 'sleep 300'), pool.run(A, 'sleep 300')]);
    assert.equal(pool.stats().pages, 2);
    let loopEnded = false;
    const loop = pool.run(A, 'loop').finally(() => {
      loopEnded = true;
    });
    await waitFor(() => pool.stats().busy === 1, 'the loop to start');
    assert.deepEqual(await pool.run(A, 'beside'), drawn(A, 'beside'));
    assert.equal(loopEnded, false, 'answered while the other page still spun');
    const loopFails = assert.rejects(loop);
    await pool.close();
    await loopFails;
  });

  // One pool (one browser launch) for the two cases below: the requests' case leaves it as it found it.
  const killRoot = profileRoot();
  let shared: BrowserPool | undefined;
  const sharedPool = () => (shared ??= make({ profileRoot: killRoot }));

  it('lets no request of a page leave the browser (fetch, image, WebSocket)', async () => {
    const pool = sharedPool();
    events.length = 0;
    const r = await pool.run(A, `fetch ${trap.url}`);
    assert.deepEqual(r, { ok: true, body: '<svg>rejected,rejected,rejected</svg>' });
    assert.equal(trap.hits(), 0, 'the loopback server was reached');
    assert.ok(events.includes('blocked'), 'the interception refused the requests');
    assert.equal(pool.started, 1);
  });

  it('replaces a browser killed under its renders and renders them once more', async () => {
    const root = killRoot;
    const pool = sharedPool();
    await Promise.all([pool.run(A, 'warm'), pool.run(A, 'warm 2')]); // both pages open
    assert.equal(pool.started, 1, 'the browser of the case before');
    const [pid] = pool.pids();
    assert.ok(pid);
    const both = [pool.run(A, 'sleep 3000'), pool.run(A, 'sleep 3001')];
    await waitFor(() => pool.stats().busy === 2, 'both renders to start');
    process.kill(-pid, 'SIGKILL');
    assert.deepEqual(await Promise.all(both), [drawn(A, 'sleep 3000'), drawn(A, 'sleep 3001')]);
    assert.equal(pool.started, 2, 'one new browser');
    assert.notEqual(pool.pids()[0], pid);
    await pool.close();
    assert.deepEqual(chromiumProcesses(root), []);
  });

  it('closes a browser idle for idleMs and starts one again on demand', async () => {
    const root = profileRoot();
    // The page's files (a drawing library's bundle) are released with the last browser.
    const kind = testPage();
    let released = 0;
    kind.release = () => released++;
    const pool = make({ idleMs: 300, profileRoot: root });
    await pool.run(kind, 'one');
    assert.equal(pool.stats().browsers, 1);
    assert.equal(released, 0);
    await waitFor(() => pool.stats().browsers === 0, 'the idle browser to close');
    assert.equal(released, 1);
    await waitFor(() => chromiumProcesses(root).length === 0, 'its processes to exit');
    assert.deepEqual(await pool.run(kind, 'two'), drawn(kind, 'two'));
    await pool.close();
  });

  it('draws two kinds in one browser, at a one-page cap by switching an idle page', async () => {
    const root = profileRoot();
    const pool = make({ pages: 1, profileRoot: root });
    events.length = 0;
    // Both at once: the second kind waits for the one page, which then gives way to it.
    const [a, b] = await Promise.all([pool.run(A, 'sleep 300'), pool.run(B, 'one')]);
    assert.deepEqual([a, b], [drawn(A, 'sleep 300'), drawn(B, 'one')]);
    assert.deepEqual(await pool.run(A, 'again'), drawn(A, 'again'));
    assert.equal(events.filter((e) => e === 'page-switch').length, 2, events.join(' '));
    assert.equal(pool.started, 1, 'one browser for both kinds');
    assert.equal(chromiumProcesses(root).filter((p) => p.type === 'browser').length, 1);
    await pool.close();
    assert.deepEqual(chromiumProcesses(root), []);
  });

  it("answers one kind's renders while a page of the other kind runs away", async () => {
    // The loop spins a core until the deadline ends it: a short deadline first, a longer one only
    // when a busy machine answered the other kind too late for the short one (the order of the two
    // answers is checked, never a duration). A render held up by the loop comes last at any deadline.
    let settled: string[] = [];
    for (const timeoutMs of [2000, 8000, 30_000]) {
      const pool = make({ timeoutMs });
      // A page of each kind, open before the loop starts.
      assert.deepEqual(await Promise.all([pool.run(A, 'warm'), pool.run(B, 'warm')]), [
        drawn(A, 'warm'),
        drawn(B, 'warm'),
      ]);
      const order: string[] = [];
      settled = order;
      const loop = pool.run(A, 'loop').then(
        () => order.push('loop answered'),
        (e: Error) => order.push(e instanceof RenderTimeout ? 'loop timed out' : e.message),
      );
      await waitFor(() => pool.stats().busy === 1 || order.length > 0, 'the loop to start');
      assert.deepEqual(await pool.run(B, 'meanwhile'), drawn(B, 'meanwhile'));
      order.push('other kind answered');
      await loop;
      assert.equal(pool.pids().length, 1);
      assert.deepEqual(await pool.run(A, 'after'), drawn(A, 'after'));
      await pool.close();
      if (order[0] === 'other kind answered') break;
    }
    assert.deepEqual(settled, ['other kind answered', 'loop timed out']);
  });
});
