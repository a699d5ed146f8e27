#!/usr/bin/env node
// After the test run: no registered test secret and nothing secret-shaped (Telegram bot tokens,
// Telegram recipient tokens, bearer tokens, signed-URL signatures, passwords in URLs) may appear in any captured log line.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.env.DEVUTIL_TEST_OUTPUT ?? join(new URL('..', import.meta.url).pathname, 'test-output');
const read = (dir) =>
  existsSync(join(out, dir))
    ? readdirSync(join(out, dir)).map((f) => readFileSync(join(out, dir, f), 'utf8'))
    : [];

const secrets = [
  ...new Set(
    read('secrets')
      .flatMap((t) => t.split('\n'))
      .filter((s) => s.length >= 8),
  ),
];
const PATTERNS = [
  ['telegram bot token', /\b\d{6,}:[A-Za-z0-9_-]{30,}\b/],
  ['telegram recipient token', /tgr_(?!\[redacted\])[A-Za-z0-9_-]{16,}/],
  // The same with characters percent-encoded, as a path or a query string may carry it.
  [
    'encoded recipient token',
    /(?:t|%74)(?:g|%67)(?:r|%72)(?:_|%5f)(?!\[redacted\])(?:[A-Za-z0-9_-]|%[0-9a-f]{2}){16,}/i,
  ],
  ['bearer token', /Bearer (?!\[redacted\])[A-Za-z0-9._~+/-]{8,}/],
  ['signed URL signature', /(X-Amz-Signature|Signature|sig)=(?!\[redacted\])[A-Za-z0-9%]{16,}/],
  ['password in URL', /[a-z][a-z0-9+.-]*:\/\/[^/\s:@"]*:(?!\[redacted\])[^/\s@"]+@/i],
];

let lines = 0;
const hits = [];
for (const text of read('logs')) {
  for (const line of text.split('\n')) {
    if (!line) continue;
    lines++;
    for (const s of secrets)
      if (line.includes(s)) hits.push(`registered secret ${s.slice(0, 6)}...: ${line.slice(0, 160)}`);
    for (const [name, re] of PATTERNS) if (re.test(line)) hits.push(`${name}: ${line.slice(0, 160)}`);
  }
}
if (hits.length) {
  console.error(`secret scan: ${hits.length} leak(s) in ${lines} log lines:`);
  for (const h of hits.slice(0, 20)) console.error(`  ${h}`);
  process.exit(1);
}
console.log(
  `secret scan: ${lines} log lines from the test run, ${secrets.length} registered secrets, no leaks`,
);
