// git through the proxy against a fake GitHub running the real `git http-backend`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installLfs, LFS_AUTH, TOKEN } from '../fixtures/proxy/github.ts';
import { ok, run } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { LogCapture, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: tempDir('devutil-home-') };

describe('proxy: git smart HTTP', { skip: toolSkip('git') }, () => {
  let w: World;
  const logs = new LogCapture();
  before(async () => {
    w = await startWorld({ logs });
  });
  after(async () => {
    await w?.close();
  });

  const clone = async (url: string, extra: string[] = []) => {
    const dest = join(tempDir('devutil-clone-'), 'c');
    await ok('git', ['clone', '-q', ...extra, url, dest], { env: GIT_ENV });
    return dest;
  };
  const head = async (dir: string) =>
    (await ok('git', ['rev-parse', 'HEAD'], { cwd: dir, env: GIT_ENV })).stdout.trim();

  it('clones with protocol v2 with and without .git', async () => {
    const a = await clone(`${w.base}/github.com/o/tiny`, ['-c', 'protocol.version=2']);
    assert.equal(await head(a), w.head);
    assert.equal(readFileSync(join(a, 'README.md'), 'utf8'), 'hello from the fixture\n');
    const b = await clone(`${w.base}/https://github.com/o/tiny.git`, ['-c', 'protocol.version=2']);
    assert.equal(await head(b), w.head);
    assert.ok(w.net.seen.some((s) => s.headers['git-protocol'] === 'version=2'));
  });

  it('clones with protocol v0 and --depth 1', async () => {
    const a = await clone(`${w.base}/github.com/o/tiny.git`, ['-c', 'protocol.version=0', '--depth', '1']);
    assert.equal(await head(a), w.head);
    const log = await ok('git', ['log', '--oneline'], { cwd: a, env: GIT_ENV });
    assert.equal(log.stdout.trim().split('\n').length, 1);
  });

  it('clones a repo with 3000 refs: gzip request body (default postBuffer)', async () => {
    const a = await clone(`${w.base}/github.com/o/many`, ['-c', 'protocol.version=0']);
    const tags = await ok('git', ['tag'], { cwd: a, env: GIT_ENV });
    assert.equal(tags.stdout.trim().split('\n').length, 3000);
    const posts = w.net.seen.filter((s) => s.url === '/o/many/git-upload-pack' && s.method === 'POST');
    assert.ok(
      posts.some(
        (s) => s.headers['content-encoding'] === 'gzip' && Number(s.headers['content-length']) > 1000,
      ),
    );
  });

  it('mirrors the 3000-ref repo with a chunked request body (small postBuffer) and fetches', async () => {
    const before = w.net.seen.length;
    const dest = join(tempDir('devutil-clone-'), 'm.git');
    const args = ['-c', 'protocol.version=0', '-c', 'http.postBuffer=65536', 'clone', '-q', '--mirror'];
    await ok('git', [...args, `${w.base}/github.com/o/many`, dest], { env: GIT_ENV });
    const tags = await ok('git', ['tag'], { cwd: dest, env: GIT_ENV });
    assert.equal(tags.stdout.trim().split('\n').length, 3000);
    const posts = w.net.seen.slice(before).filter((s) => s.method === 'POST');
    assert.ok(
      posts.some((s) => s.headers['transfer-encoding'] === 'chunked' && !s.headers['content-length']),
    );
    await ok('git', ['fetch', '-q', 'origin'], { cwd: dest, env: GIT_ENV });
  });

  it('follows a renamed-repo redirect on info/refs', async () => {
    const a = await clone(`${w.base}/github.com/o/old-name`);
    assert.equal(await head(a), w.head);
  });

  it('clones a private repo with user:token@ and refuses without it', async () => {
    const u = new URL(w.base);
    const authed = `${u.protocol}//user:${TOKEN}@${u.host}${u.pathname}/github.com/o/private`;
    const a = await clone(authed);
    assert.equal(await head(a), w.head);
    const dest = join(tempDir('devutil-clone-'), 'x');
    const r = await run('git', ['clone', '-q', `${w.base}/github.com/o/private`, dest], { env: GIT_ENV });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Authentication failed|could not read Username|terminal prompts disabled/);
    assert.ok(!logs.text().includes(TOKEN), 'the token never reaches the logs');
  });

  it('never forwards Cookie or X-Forwarded-For upstream', async () => {
    await ok(
      'git',
      [
        '-c',
        `http.extraHeader=Cookie: a=b`,
        '-c',
        'http.extraHeader=X-Forwarded-For: 1.2.3.4',
        'ls-remote',
        `${w.base}/github.com/o/tiny`,
      ],
      {
        env: GIT_ENV,
      },
    );
    const gitReqs = w.net.seen.filter((s) => s.host === 'github.com');
    assert.ok(gitReqs.length > 0);
    for (const s of gitReqs) {
      assert.equal(s.headers.cookie, undefined);
      assert.equal(s.headers['x-forwarded-for'], undefined);
    }
  });

  it('pulls LFS objects through the proxy (batch hrefs rewritten)', {
    skip: toolSkip('git-lfs', ['version']),
  }, async () => {
    const { content } = installLfs(w.net, w.dir);
    const lfs = ['-c', 'filter.lfs.process=git-lfs filter-process', '-c', 'filter.lfs.required=true'];
    const a = await clone(`${w.base}/github.com/o/lfs`, lfs);
    assert.ok(readFileSync(join(a, 'big.bin')).equals(content));
    const objectGets = w.net.seen.filter((s) => s.host === 'objects.githubusercontent.com');
    assert.ok(objectGets.length > 0 && objectGets.every((s) => s.headers.authorization === LFS_AUTH));
    assert.ok(!logs.text().includes('lfs-fixture-secret'), 'the LFS header value never reaches the logs');
  });
});
