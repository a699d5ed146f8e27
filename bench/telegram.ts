// Message-bot relay: latency added by devutil in front of the (fake) Bot API, and req/s at
// concurrency 32, both measured with the same wrk POST against the fake directly and through
// devutil. Targets (issue 5): p50 overhead under 1 ms; req/s reported. Budgets are off here.
// The Bot API base URL (issue 26): the same sendMessage body a bot library sends, to the fake
// directly, through devutil's /telegram/bot<key>/sendMessage, and through a bare node:http
// forwarder with a keep-alive agent (the ceiling: what passing a call on costs in Node alone).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';
import { BOT, CHATS } from '../test/fixtures/telegram/fake-bot-api.ts';
import { waitHttp } from '../test/helpers/nginx.ts';
import { freePort } from '../test/helpers/ports.ts';
import { header, invalid, report, startDevutil, tempFile, wrk } from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
header(
  'Telegram: the relay POST and the Bot API base URL vs the fake Bot API direct and a bare node:http forwarder',
);
const ROOT = new URL('..', import.meta.url).pathname;

// The fake runs in its own process, like Telegram would, so it does not share devutil's event loop.
const fakeProc = spawn(process.execPath, [...TS_EXEC_ARGV, 'test/fixtures/telegram/fake-bot-api.ts', '0'], {
  cwd: ROOT,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const fakeUrl = await new Promise<string>((resolve, reject) => {
  createInterface({ input: fakeProc.stdout! }).once('line', resolve);
  fakeProc.once('exit', () => reject(new Error('fake Bot API exited')));
});

const post = (body: object) =>
  tempFile(
    'post.lua',
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = '${JSON.stringify(body)}'\n`,
  );
const direct = post({ chat_id: CHATS.user!.id, text: 'bench *message*', parse_mode: 'MarkdownV2' });
const relayed = post({ apiKey: BOT.token, chatId: CHATS.user!.id, msgText: 'bench *message*' });
const off = 'off';
const dev = await startDevutil({
  DEVUTIL_LOG_LEVEL: 'error',
  // Loopback is reachable only through an egress override, as for any outbound request.
  DEVUTIL_EGRESS_RESOLVE: `api.telegram.test=${new URL(fakeUrl).host}`,
  DEVUTIL_TELEGRAM_API_BASE: 'http://api.telegram.test',
  DEVUTIL_TELEGRAM_RATE_LIMIT: off,
  DEVUTIL_TELEGRAM_KEY_RATE_LIMIT: off,
  DEVUTIL_TELEGRAM_BOT_RATE: off,
  DEVUTIL_TELEGRAM_CHAT_RATE: off,
  DEVUTIL_TELEGRAM_GROUP_RATE: off,
  DEVUTIL_TELEGRAM_API_RATE_LIMIT: off,
});
const directUrl = `${fakeUrl}/bot${BOT.token}/sendMessage`;
const relayUrl = `${dev.url}/rest/api/v1/telegram`;
const baseUrl = `${dev.url}/telegram/bot${BOT.token}/sendMessage`;
// The ceiling: a bare forwarder in a process of its own, as devutil is.
const barePort = await freePort();
const fake = new URL(fakeUrl);
const bareProc = spawn(process.execPath, [
  '-e',
  `const http=require('node:http');const agent=new http.Agent({keepAlive:true,maxSockets:32});` +
    `http.createServer((q,s)=>{const u=http.request({host:'${fake.hostname}',port:${fake.port},` +
    `path:q.url.replace(/^\\/telegram/,''),method:q.method,headers:q.headers,agent},` +
    `r=>{s.writeHead(r.statusCode,r.headers);r.pipe(s)});u.on('error',()=>{s.statusCode=502;s.end()});q.pipe(u)})` +
    `.listen(${barePort},'127.0.0.1')`,
]);
const bareUrl = `http://127.0.0.1:${barePort}/telegram/bot${BOT.token}/sendMessage`;
try {
  await waitHttp(`http://127.0.0.1:${barePort}/telegram/bot${BOT.token}/getMe`, 30_000);
  wrk(directUrl, { durationSec: 2, connections: 8, script: direct });
  wrk(relayUrl, { durationSec: 2, connections: 8, script: relayed });
  // Latency: one connection, so queueing does not hide the per-request cost.
  const d1 = wrk(directUrl, { durationSec, connections: 1, script: direct });
  const r1 = wrk(relayUrl, { durationSec, connections: 1, script: relayed });
  // Throughput at concurrency 32.
  const d32 = wrk(directUrl, { durationSec, connections: 32, script: direct });
  const r32 = wrk(relayUrl, { durationSec, connections: 32, script: relayed });
  const bad1 = invalid({ devutil: r1, direct: d1 });
  const bad32 = invalid({ devutil: r32, direct: d32 });
  report('POST sendMessage, 1 connection', 'fake Bot API direct', [
    {
      metric: 'p50 latency',
      unit: 'ms',
      devutil: r1.p50ms,
      anchor: d1.p50ms,
      higherIsBetter: false,
      invalid: bad1,
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: r1.p99ms,
      anchor: d1.p99ms,
      higherIsBetter: false,
      invalid: bad1,
    },
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: r1.rps,
      anchor: d1.rps,
      higherIsBetter: true,
      invalid: bad1,
    },
  ]);
  report('POST sendMessage, 32 connections', 'fake Bot API direct', [
    {
      metric: 'throughput',
      unit: 'req/s',
      devutil: r32.rps,
      anchor: d32.rps,
      higherIsBetter: true,
      invalid: bad32,
    },
    {
      metric: 'p50 latency',
      unit: 'ms',
      devutil: r32.p50ms,
      anchor: d32.p50ms,
      higherIsBetter: false,
      invalid: bad32,
    },
    {
      metric: 'p99 latency',
      unit: 'ms',
      devutil: r32.p99ms,
      anchor: d32.p99ms,
      higherIsBetter: false,
      invalid: bad32,
    },
  ]);
  // The Bot API base URL: a library's sendMessage passed on as it came.
  wrk(baseUrl, { durationSec: 2, connections: 8, script: direct });
  wrk(bareUrl, { durationSec: 2, connections: 8, script: direct });
  const b1 = wrk(baseUrl, { durationSec, connections: 1, script: direct });
  const n1 = wrk(bareUrl, { durationSec, connections: 1, script: direct });
  const b32 = wrk(baseUrl, { durationSec, connections: 32, script: direct });
  const n32 = wrk(bareUrl, { durationSec, connections: 32, script: direct });
  for (const [title, anchor, dv, an] of [
    ['Bot API base URL sendMessage, 1 connection', 'fake Bot API direct', b1, d1],
    ['Bot API base URL sendMessage, 1 connection', 'bare node:http forwarder', b1, n1],
    ['Bot API base URL sendMessage, 32 connections', 'fake Bot API direct', b32, d32],
    ['Bot API base URL sendMessage, 32 connections', 'bare node:http forwarder', b32, n32],
  ] as const) {
    const bad = invalid({ devutil: dv, anchor: an });
    report(title, anchor, [
      {
        metric: 'p50 latency',
        unit: 'ms',
        devutil: dv.p50ms,
        anchor: an.p50ms,
        higherIsBetter: false,
        invalid: bad,
      },
      {
        metric: 'p99 latency',
        unit: 'ms',
        devutil: dv.p99ms,
        anchor: an.p99ms,
        higherIsBetter: false,
        invalid: bad,
      },
      {
        metric: 'throughput',
        unit: 'req/s',
        devutil: dv.rps,
        anchor: an.rps,
        higherIsBetter: true,
        invalid: bad,
      },
    ]);
  }
  const p50 = r1.p50ms - d1.p50ms;
  const verdict = bad1 ? `NOT VALID (${bad1})` : p50 < 1 ? 'MET' : 'NOT MET';
  console.log(
    `\nadded latency (1 connection): p50 ${p50.toFixed(3)} ms (target < 1 ms: ${verdict}), p99 ${(r1.p99ms - d1.p99ms).toFixed(3)} ms`,
  );
  console.log(
    `added latency of the Bot API base URL (1 connection): p50 ${(b1.p50ms - d1.p50ms).toFixed(3)} ms`,
  );
} finally {
  await dev.close();
  bareProc.kill('SIGTERM');
  fakeProc.kill('SIGTERM');
}
