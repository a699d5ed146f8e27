// The leak detector itself: it must know this checkout wherever it lives, and not cry wolf.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { INTERNALS } from './leaks.ts';

const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

describe('leak detector', () => {
  const leaks = [
    `ENOENT: no such file, open '${root}/data/blobs/x'`,
    `${root}/src/server.ts`,
    '/home/ci/devutil/src/errors.ts',
    '/root/.cache/devutil-node/x',
    "open '/tmp/devutil-test-a1b2/blobs'",
    'at Object.<anonymous> (node_modules/fastify/lib/route.js)',
    'file:///srv/app/src/main.ts',
    'at handler (src/services/files/routes.ts:41:13)',
    'at net.sourceforge.plantuml.Run.main(Run.java:10)',
  ];
  for (const text of leaks) it(`finds ${text.slice(0, 60)}`, () => assert.match(text, INTERNALS));

  const clean = [
    '{"success":false,"message":"file not found"}',
    'the key must not contain ".." segments',
    'github.com.evil.com is not on the allow-list\n',
    '{"status":0,"message":"width must be between 1 and 4096","data":null}',
    'https://proxy.example.net/proxy/github.com/o/r.git',
  ];
  for (const text of clean) it(`passes ${text.slice(0, 60)}`, () => assert.doesNotMatch(text, INTERNALS));
});
