// What no client answer may contain: an absolute path of this checkout (wherever it is checked out,
// found at run time), home, temp or node_modules paths, file:// URLs, or stack frames.
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const places = new Set([ROOT, realpathSync(ROOT), tmpdir(), homedir()].filter((p) => p.length > 1));

/** Exported so a test can show it matches the shapes it should (leaks.test.ts). */
export const INTERNALS = new RegExp(
  [
    ...[...places].map((p) => `${literal(p)}(?:/|\\b)`),
    '/home/',
    '/root/',
    '/tmp/',
    'node_modules',
    'file://',
    '\\bat [^\\n]+:\\d+:\\d+', // V8 stack frame: "at fn (/x/y.ts:12:5)"
    '\\bat [\\w.$<>]+\\(', // Java stack frame: "at net.sourceforge.Foo.bar("
  ].join('|'),
);

/** Fails with the leaked text itself, so a failure says what reached the client. */
export function assertNoInternals(body: string, label: string): void {
  const m = INTERNALS.exec(body);
  assert.equal(m, null, `${label} leaks ${JSON.stringify(m?.[0])}: ${body.slice(0, 300)}`);
}
