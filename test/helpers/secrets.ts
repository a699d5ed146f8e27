// Test secrets (bot keys, tokens) registered for the run-wide log scan (scripts/scan-logs.js).
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const DIR = join(
  process.env['DEVUTIL_TEST_OUTPUT'] ?? join(new URL('../..', import.meta.url).pathname, 'test-output'),
  'secrets',
);

/** Records a secret that must never appear in any log line of the test run. */
export function registerSecret(secret: string): string {
  mkdirSync(DIR, { recursive: true });
  appendFileSync(join(DIR, `${process.pid}.txt`), `${secret}\n`);
  return secret;
}

/** A fresh random secret with a readable prefix, registered for the scan. */
export function testSecret(prefix = 'secret-'): string {
  return registerSecret(`${prefix}${randomBytes(12).toString('hex')}`);
}
