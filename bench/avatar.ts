// Avatars: a cached avatar from devutil vs nginx serving the same PNG file (target >= 0.6x), then
// the uncached identicon rate at 80 and 512 px (every request a new hash, so each one is drawn,
// encoded and written to the caches). Both servers single-process, access logs off, same wrk load.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GENERATORS } from '../src/services/avatar/gen/index.ts';
import { renderArt } from '../src/services/avatar/render.ts';
import { Seed } from '../src/services/avatar/seed.ts';
import {
  invalid,
  median,
  report,
  saturation,
  startDevutil,
  startNginx,
  tempFile,
  treeCpuSeconds,
  type WrkResult,
  wrk,
} from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const connections = 64;
const HASH = '0bc83cb571cd1c50ba6f3e8a78ef1346';

// A wrk script that asks for a fresh random MD5-shaped hash on every request.
const uncached = (size: number) =>
  tempFile(
    `uncached-${size}.lua`,
    `math.randomseed(${size})
request = function()
  local h = string.format("%08x%08x%08x%08x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff), math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
  return wrk.format("GET", "/avatar/" .. h .. "?d=identicon&s=${size}")
end
`,
  );

/** A wrk run plus requests per CPU-second of the server, which moves little with machine load. */
function measured(url: string, pid: number, side: 'devutil' | 'anchor'): WrkResult & { perCpu: number } {
  const before = treeCpuSeconds(pid);
  const r = wrk(url, { durationSec, connections, watch: { [side]: pid } });
  return { ...r, perCpu: r.requests / (treeCpuSeconds(pid) - before) };
}

/** Identicons drawn and PNG-encoded per second in this process, no HTTP (context). */
async function inProcessRate(size: number, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const seed = new Seed(i.toString(16).padStart(32, '0'));
    await renderArt(GENERATORS.identicon(seed, size, { initials: '' }), size, 'png');
  }
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

const dev = await startDevutil({
  DEVUTIL_LOG_LEVEL: 'error',
  DEVUTIL_AVATAR_UPSTREAM: 'none',
  DEVUTIL_AVATAR_RENDER_QUEUE: '10000',
  // One client (wrk) drives all the load: its fair share of the render slots is all of them.
  DEVUTIL_AVATAR_CLIENT_SHARE: '100',
});
const root = mkdtempSync(join(tmpdir(), 'devutil-avatar-nginx-'));
// nginx workers run as nobody: without this the anchor answered 403 to every request (and was
// measured as the faster side).
chmodSync(root, 0o755);
const cachedPath = `/avatar/${HASH}?d=identicon&s=80`;
const png = Buffer.from(await (await fetch(dev.url + cachedPath)).arrayBuffer());
writeFileSync(join(root, HASH), png);
const ngx = await startNginx(
  `location /avatar/ { alias ${root}/; default_type image/png; add_header Cache-Control "max-age=300"; etag on; }`,
  '',
  `/avatar/${HASH}`,
);
try {
  wrk(dev.url + cachedPath, { durationSec: 2, connections });
  wrk(`${ngx.url}/avatar/${HASH}`, { durationSec: 2, connections });
  // Alternating rounds, medians: drift in the machine's load hits both sides alike.
  const ds: ReturnType<typeof measured>[] = [];
  const ns: ReturnType<typeof measured>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    ds.push(measured(dev.url + cachedPath, dev.pid, 'devutil'));
    ns.push(measured(`${ngx.url}/avatar/${HASH}`, ngx.pid, 'anchor'));
  }
  console.log(
    `rounds (req/s devutil / nginx): ${ds.map((x, i) => `${x.rps.toFixed(0)} / ${ns[i]?.rps.toFixed(0)}`).join(', ')}`,
  );
  const mid = (rs: ReturnType<typeof measured>[]) => {
    const m = median(rs.map((r) => r.rps));
    const run = rs.find((r) => r.rps === m) ?? (rs[0] as ReturnType<typeof measured>);
    return { ...run, perCpu: median(rs.map((r) => r.perCpu)), p99ms: median(rs.map((r) => r.p99ms)) };
  };
  const d = mid(ds);
  const n = mid(ns);
  const bad = invalid({ devutil: ds, nginx: ns });
  report(`cached avatar, 80 px identicon PNG (${png.length} B), median of ${ROUNDS}`, 'nginx static', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: d.rps,
      anchor: n.rps,
      higherIsBetter: true,
      target: 0.6,
      invalid: bad,
    },
    {
      metric: 'requests per CPU-second',
      unit: 'req/cpu-s',
      devutil: d.perCpu,
      anchor: n.perCpu,
      higherIsBetter: true,
    },
    { metric: 'p99 latency', unit: 'ms', devutil: d.p99ms, anchor: n.p99ms, higherIsBetter: false },
    { metric: 'p50 latency', unit: 'ms', devutil: d.p50ms, anchor: n.p50ms, higherIsBetter: false },
  ]);
  console.log(saturation(d, n, 'nginx static'));
  const rows = [];
  for (const size of [80, 512]) {
    const u = wrk(dev.url, { durationSec, connections: 16, script: uncached(size) });
    if (u.errors) console.log(`uncached ${size}px: ${u.errors} errors`);
    rows.push({ size, u });
  }
  report('uncached identicons over HTTP (each request a new hash)', 'devutil cached', [
    ...rows.map(({ size, u }) => ({
      metric: `identicon ${size}px`,
      unit: 'img/s',
      devutil: u.rps,
      anchor: d.rps,
      higherIsBetter: true,
      invalid: invalid({ uncached: u }),
    })),
    ...rows.map(({ size, u }) => ({
      metric: `identicon ${size}px p99`,
      unit: 'ms',
      devutil: u.p99ms,
      anchor: d.p99ms,
      higherIsBetter: false,
    })),
  ]);
  const r80 = await inProcessRate(80, 400);
  const r512 = await inProcessRate(512, 100);
  console.log(
    `\ncontext: one process drawing + encoding identicons, no HTTP: 80px ${r80.toFixed(0)}/s, 512px ${r512.toFixed(0)}/s (512/80: ${(r512 / r80).toFixed(2)}x)`,
  );
} finally {
  await dev.close();
  await ngx.close();
  rmSync(root, { recursive: true, force: true });
}
