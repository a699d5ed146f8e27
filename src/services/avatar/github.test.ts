import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import sharp from 'sharp';
import { type Internet, startInternet } from '../../../test/fixtures/proxy/internet.ts';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { parseLogin } from './github.ts';

/** GitHub account id by login, as github.com's `<login>.png` redirect uses it. */
const USERS: Record<string, { id: number; colour: [number, number, number] }> = {
  octocat: { id: 583231, colour: [220, 30, 30] },
  'mona-lisa': { id: 7, colour: [30, 30, 220] },
};

async function firstPixel(buf: Buffer): Promise<number[]> {
  const { data } = await sharp(buf).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return [data[0]!, data[1]!, data[2]!];
}

describe('avatars of GitHub accounts: /avatar/github/<user>', { timeout: 60_000 }, () => {
  let net: Internet;
  let app: FastifyInstance;
  let githubDown = false;

  before(async () => {
    net = await startInternet(tempDir());
    // github.com/<login>.png answers 302 to the avatar CDN, as the real site does.
    net.on('github.com', (_req, res, url) => {
      if (githubDown) return void res.writeHead(503).end('unavailable');
      const m = /^\/([^/]+)\.png$/.exec(url.pathname);
      const user = m ? USERS[m[1]!.toLowerCase()] : undefined;
      if (m?.[1] === 'evil-redirect')
        return void res.writeHead(302, { location: 'https://evil.test/x.png' }).end();
      if (!user) return void res.writeHead(404, { 'content-type': 'text/html' }).end('Not Found');
      const size = url.searchParams.get('size') ?? '460';
      res
        .writeHead(302, { location: `https://avatars.githubusercontent.com/u/${user.id}?size=${size}&v=4` })
        .end();
    });
    net.on('avatars.githubusercontent.com', async (_req, res, url) => {
      const id = Number(/^\/u\/(\d+)$/.exec(url.pathname)?.[1]);
      const user = Object.values(USERS).find((u) => u.id === id);
      if (!user) return void res.writeHead(404).end();
      const size = Number(url.searchParams.get('size') ?? 460);
      const [r, g, b] = user.colour;
      const png = await sharp({ create: { width: size, height: size, channels: 3, background: { r, g, b } } })
        .png()
        .toBuffer();
      res
        .writeHead(200, { 'content-type': 'image/png', 'cache-control': 'max-age=300', etag: `"${id}"` })
        .end(png);
    });
    app = await buildTestServer({
      overrides: {
        proxy: { resolve: net.resolve, upstreamCa: net.caFile },
        avatar: { upstream: 'none' },
      },
    });
  });
  after(async () => {
    await net?.close();
    await app?.close();
  });

  const asked = (host: string) => net.seen.filter((s) => s.host === host).length;

  it('serves the account picture at the asked size and format, fetched through github.com once', async () => {
    const r = await app.inject({ url: '/avatar/github/octocat?s=64' });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.headers['x-avatar-source'], 'github');
    assert.equal(r.headers['content-type'], 'image/png');
    const m = await sharp(r.rawPayload).metadata();
    assert.deepEqual([m.width, m.height], [64, 64]);
    const [red, , blue] = await firstPixel(r.rawPayload);
    assert.ok(red! > 200 && blue! < 60);
    const jpg = await app.inject({ url: '/avatar/github/OctoCat.jpg?s=40' });
    assert.equal(jpg.headers['content-type'], 'image/jpeg');
    assert.equal((await sharp(jpg.rawPayload).metadata()).width, 40);
    assert.equal(asked('github.com'), 1, 'one fetch for every size, format and letter case');
    assert.equal(asked('avatars.githubusercontent.com'), 1);
    const seen = net.seen.find((s) => s.host === 'github.com')!;
    assert.equal(seen.url, '/octocat.png?size=512');
  });

  const table: { name: string; url: string; status: number; source?: string }[] = [
    {
      name: 'unknown account: the d= default',
      url: '/avatar/github/nobody-here?d=identicon',
      status: 200,
      source: 'generated',
    },
    { name: 'unknown account with d=404', url: '/avatar/github/nobody-else?d=404', status: 404 },
    {
      name: 'a redirect off GitHub is not followed',
      url: '/avatar/github/evil-redirect?d=retro',
      status: 200,
      source: 'generated',
    },
    { name: 'f=y skips GitHub', url: '/avatar/github/mona-lisa?f=y&d=mp', status: 200, source: 'generated' },
    { name: 'leading hyphen', url: '/avatar/github/-bad', status: 400 },
    { name: 'double hyphen', url: '/avatar/github/a--b', status: 400 },
    { name: '40 characters', url: `/avatar/github/${'a'.repeat(40)}`, status: 400 },
    { name: 'underscore', url: '/avatar/github/a_b', status: 400 },
    { name: 'encoded slash', url: '/avatar/github/..%2f..%2fetc', status: 400 },
    { name: 'unicode look-alike', url: '/avatar/github/%D0%BEctocat', status: 400 },
  ];
  for (const row of table)
    it(`${row.name} -> ${row.status}`, async () => {
      const r = await app.inject({ url: row.url });
      assert.equal(r.statusCode, row.status, r.body);
      if (row.source) assert.equal(r.headers['x-avatar-source'], row.source);
      if (row.status === 400) {
        assert.match(String(r.headers['content-type']), /^text\/plain/);
        assert.match(r.body, /GitHub login/);
      }
    });

  it('GitHub down: the default is drawn, and it is not asked again for the next account', async () => {
    githubDown = true;
    const before = asked('github.com');
    const a = await app.inject({ url: '/avatar/github/mona-lisa?d=wavatar' });
    assert.equal(a.headers['x-avatar-source'], 'generated');
    const b = await app.inject({ url: '/avatar/github/someone-new?d=wavatar' });
    assert.equal(b.headers['x-avatar-source'], 'generated');
    assert.equal(asked('github.com'), before + 1);
    // Pictures fetched before keep being served.
    const c = await app.inject({ url: '/avatar/github/octocat?s=32' });
    assert.equal(c.headers['x-avatar-source'], 'github');
    githubDown = false;
  });

  it('switched off: the default is drawn and GitHub is never asked', async () => {
    const off = await buildTestServer({
      overrides: {
        proxy: { resolve: net.resolve, upstreamCa: net.caFile },
        avatar: { upstream: 'none', github: false },
      },
    });
    try {
      const before = asked('github.com');
      const r = await off.inject({ url: '/avatar/github/octocat?d=identicon' });
      assert.equal(r.headers['x-avatar-source'], 'generated');
      assert.equal(asked('github.com'), before);
    } finally {
      await off.close();
    }
  });

  it('parses logins as GitHub does', () => {
    assert.equal(parseLogin('Mona-Lisa'), 'mona-lisa');
    assert.equal(parseLogin('a'.repeat(39)), 'a'.repeat(39));
    for (const bad of ['', '-a', 'a-', 'a--b', 'a.b', 'a b', 'a'.repeat(40)])
      assert.equal(parseLogin(bad), null, bad);
  });
});
