// Message-bot relay: latency added by devutil in front of the (fake) Bot API, and req/s at
// concurrency 32, both measured with the same wrk POST against the fake directly and through
// devutil. Targets (issue 5): p50 overhead under 1 ms; req/s reported. Budgets are off here.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { TS_EXEC_ARGV } from '../scripts/ts-loader.js';
import { BOT, CHATS } from '../test/fixtures/telegram/fake-bot-api.ts';
import { invalid, report, startDevutil, tempFile, wrk } from './lib.ts';

const durationSec = Number(process.env['BENCH_SECONDS'] ?? 10);
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
});
const directUrl = `${fakeUrl}/bot${BOT.token}/sendMessage`;
const relayUrl = `${dev.url}/rest/api/v1/telegram`;
try {
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
  const p50 = r1.p50ms - d1.p50ms;
  const verdict = bad1 ? `NOT VALID (${bad1})` : p50 < 1 ? 'MET' : 'NOT MET';
  console.log(
    `\nadded latency (1 connection): p50 ${p50.toFixed(3)} ms (target < 1 ms: ${verdict}), p99 ${(r1.p99ms - d1.p99ms).toFixed(3)} ms`,
  );
} finally {
  await dev.close();
  fakeProc.kill('SIGTERM');
}
