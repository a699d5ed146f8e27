import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { testSecret } from '../../../test/helpers/secrets.ts';
import { type Running, startTestServer } from '../../../test/helpers/server.ts';
import { toolSkip } from '../../../test/helpers/tools.ts';

const TOKEN = testSecret('avatar-admin-');

const run = promisify(execFile);

/** curl runs as a child process while this process serves it (never a sync call here). */
async function curl(args: string[]): Promise<string> {
  return (await run('curl', ['-sS', '--max-time', '20', ...args], { encoding: 'utf8' })).stdout;
}

describe('avatars through curl on a listening server', { skip: toolSkip('curl') }, () => {
  let srv: Running;
  const dir = mkdtempSync(join(tmpdir(), 'avatar-curl-'));
  before(async () => {
    srv = await startTestServer({
      overrides: {
        avatar: { upstream: 'none', host: 'avatars.test', adminToken: TOKEN, rateLimit: '40/min' },
      },
    });
  });
  after(async () => {
    await srv?.close();
  });

  it('fetches a Gravatar URL on the avatar host by swapping only the host', async () => {
    const out = join(dir, 'a.jpg');
    const meta = await curl([
      '-H',
      'Host: avatars.test',
      '-o',
      out,
      '-w',
      '%{http_code} %{content_type}',
      `${srv.url}/avatar/0bc83cb571cd1c50ba6f3e8a78ef1346.jpg?s=96&d=identicon&r=g`,
    ]);
    assert.equal(meta, '200 image/jpeg');
    const m = await sharp(readFileSync(out)).metadata();
    assert.deepEqual([m.width, m.height, m.format], [96, 96, 'jpeg']);
  });

  it('uploads with curl -F as multipart and serves it back by the hash of the address', async () => {
    const img = join(dir, 'me.png');
    await sharp({ create: { width: 120, height: 90, channels: 3, background: '#10c010' } })
      .png()
      .toFile(img);
    const md5 = '40f8d096a3777232204cb3f796c577b7'; // george@example.com
    const put = await curl([
      '-X',
      'PUT',
      '-H',
      `Authorization: Bearer ${TOKEN}`,
      '-F',
      `file=@${img};type=image/png`,
      '-F',
      'email=george@example.com',
      '-w',
      '\n%{http_code}',
      `${srv.url}/avatar/${md5}`,
    ]);
    assert.match(put, /\n201$/, put);
    const out = join(dir, 'back.png');
    await curl(['-o', out, `${srv.url}/avatar/${md5}?s=32&d=404`]);
    const { data, info } = await sharp(readFileSync(out)).raw().toBuffer({ resolveWithObject: true });
    assert.equal(info.width, 32);
    assert.ok(data[1]! > 150 && data[0]! < 60, 'the green upload comes back');
  });

  it('answers past the configured rate with 429, Retry-After and a plain-text line', async () => {
    let last = '';
    for (let i = 0; i < 45 && !last.startsWith('429'); i++) {
      last = await curl([
        '-o',
        '/dev/null',
        '-w',
        '%{http_code} %{content_type} retry=%header{retry-after}',
        `${srv.url}/avatar/?d=blank&s=1`,
      ]);
    }
    assert.match(last, /^429 text\/plain.* retry=\d+$/);
  });
});
