// The checks every multi-instance topology must pass, where `a` and `b` may be one address (cluster
// mode, test/e2e/scale-out.test.ts) or two processes (test/e2e/fleet.test.ts): an upload through one
// downloads byte-identical through the other, the owner token works across them, and they share one
// rate-limit budget (DEVUTIL_IP_RATE_LIMIT of CHECKS_ENV).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from '../../helpers/server.ts';

const run = promisify(execFile);

/** What the checks need of the instances' configuration. */
export const CHECKS_ENV = { DEVUTIL_IP_RATE_LIMIT: '3/min' };

async function upload(base: string, key: string, file: string, token?: string) {
  const args = ['-s', '-o', '-', '-D', '-', '-F', `file=@${file};type=text/plain`, `${base}/api/file/${key}`];
  if (token) args.unshift('-H', `X-Owner-Token: ${token}`);
  const { stdout } = await run('curl', args);
  const [head = '', body = ''] = stdout.split('\r\n\r\n');
  const status = Number(/^HTTP\/[\d.]+ (\d+)/.exec(head)?.[1]);
  const owner = /^x-owner-token: (.+)$/im.exec(head)?.[1]?.trim();
  return { status, owner, json: JSON.parse(body) };
}

async function statuses(urls: string[]): Promise<number[]> {
  const out = [];
  for (const u of urls) out.push((await fetch(u)).status);
  return out;
}

/** The checks both topologies must pass: `a` and `b` may be the same address (cluster mode). */
export function sharedChecks(name: string, get: () => { a: string; b: string }) {
  it(`${name}: uploads through one address and downloads byte-identical through the other`, async () => {
    const { a, b } = get();
    const dir = tempDir();
    const file = join(dir, 'notes.txt');
    const content = `${'scale out line\n'.repeat(5000)}${randomBytes(8).toString('hex')}`;
    writeFileSync(file, content);
    const key = `k-${randomBytes(4).toString('hex')}`;
    const up = await upload(a, key, file);
    assert.equal(up.status, 200, JSON.stringify(up.json));
    assert.equal(up.json.data.file_info.compressed, true);
    assert.ok(up.owner);
    const dl = tempDir();
    await run('curl', ['-s', '-f', '-OJ', `${b}/api/file/${key}`], { cwd: dl });
    assert.equal(readFileSync(join(dl, 'notes.txt'), 'utf8'), content);

    // The owner token works across instances, and a stranger cannot overwrite.
    writeFileSync(file, 'replacement');
    assert.equal((await upload(b, key, file)).status, 409);
    assert.equal((await fetch(`${a}/api/file/${key}`).then((r) => r.text())).length, content.length);
    assert.equal((await upload(b, key, file, up.owner)).status, 200);
    assert.equal(await fetch(`${a}/api/file/${key}`).then((r) => r.text()), 'replacement');
  });

  it(`${name}: shares one rate-limit budget`, async () => {
    const { a, b } = get();
    // The IP budget is 3 per minute per client; the 4th request, on either address, is refused.
    const got = await statuses([
      `${a}/rest/api/v1/ip`,
      `${b}/rest/api/v1/ip`,
      `${a}/rest/api/v1/ip`,
      `${b}/rest/api/v1/ip`,
    ]);
    assert.deepEqual(got, [200, 200, 200, 429]);
  });
}
