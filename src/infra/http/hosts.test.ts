import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { SERVICES } from '../../services/index.ts';
import { hostnameOf, hostRewriter, hostRoutes, publicUrls } from './hosts.ts';

describe('host routing', () => {
  const none = { host: '', publicUrl: '' };
  const rw = hostRewriter(
    hostRoutes(
      {
        proxy: { ...none, host: 'proxy.example.com' },
        diagrams: { ...none, host: 'uml.example.com:8443' },
        avatar: { ...none, host: 'avatar.example.com' },
        telegram: { ...none, host: 'tg.example.com' },
      },
      SERVICES,
    ),
  );

  it('maps every path on the proxy host onto the /proxy mount', () => {
    assert.equal(rw('proxy.example.com', '/github.com/a/b'), '/proxy/github.com/a/b');
    assert.equal(rw('PROXY.example.com.:8080', '/https://github.com/x'), '/proxy/https://github.com/x');
    assert.equal(rw('proxy.example.com', '/healthz'), '/proxy/healthz');
  });
  it('puts every path on the Telegram host under the /telegram mount (a Bot API base URL at the root)', () => {
    assert.equal(rw('tg.example.com', '/bot1:abc/getMe'), '/telegram/bot1:abc/getMe');
    assert.equal(
      rw('tg.example.com', '/file/bot1:abc/documents/a.pdf'),
      '/telegram/file/bot1:abc/documents/a.pdf',
    );
  });
  it('matches a configured host:port exactly', () => {
    assert.equal(rw('uml.example.com:8443', '/svg/abc'), '/plantuml/svg/abc');
    assert.equal(rw('uml.example.com', '/svg/abc'), '/svg/abc');
  });
  it('keeps /avatar/ paths on the avatar host and puts the rest under it', () => {
    assert.equal(rw('avatar.example.com', '/avatar/abc?s=80'), '/avatar/abc?s=80');
    assert.equal(rw('avatar.example.com', '/other'), '/avatar/other');
  });
  it('leaves the base host and look-alike hosts alone', () => {
    assert.equal(rw('example.com', '/api/ip'), '/api/ip');
    assert.equal(rw('proxy.example.com.evil.net', '/x'), '/x');
    assert.equal(rw('evil.net', '/x'), '/x');
    assert.equal(rw(undefined, '/x'), '/x');
  });
  it('parses Host headers', () => {
    assert.equal(hostnameOf('[::1]:8080'), '[::1]');
    assert.equal(hostnameOf('Example.COM.'), 'example.com');
  });
  it('derives public URLs from config, never from the request', () => {
    const base = { server: { publicUrl: 'https://dev.example.com' } };
    assert.deepEqual(
      publicUrls({ ...base, proxy: none, diagrams: none, avatar: none, telegram: none }, SERVICES),
      {
        base: 'https://dev.example.com',
        proxy: 'https://dev.example.com/proxy',
        diagrams: 'https://dev.example.com/plantuml',
        avatar: 'https://dev.example.com',
        telegram: 'https://dev.example.com/telegram',
      },
    );
    const u = publicUrls(
      {
        ...base,
        proxy: { host: 'gh.example.com', publicUrl: '' },
        diagrams: { host: '', publicUrl: 'https://uml.example.org' },
        avatar: { host: 'avatar.example.com', publicUrl: '' },
        telegram: { host: 'tg.example.com', publicUrl: '' },
      },
      SERVICES,
    );
    assert.equal(u.telegram, 'https://tg.example.com');
    assert.equal(u.proxy, 'https://gh.example.com');
    assert.equal(u.diagrams, 'https://uml.example.org');
    assert.equal(u.avatar, 'https://avatar.example.com');
  });

  it('routes a request by its Host header through the real server', async () => {
    const app = await buildTestServer({ overrides: { proxy: { host: 'proxy.test' } } });
    try {
      // On the proxy host even /rest/api/v1/ip belongs to the proxy, so it is not the IP endpoint.
      const onProxy = await app.inject({ url: '/rest/api/v1/ip', headers: { host: 'proxy.test' } });
      assert.notEqual(onProxy.statusCode, 200);
      assert.ok(!onProxy.body.includes('"ip"'));
      const onBase = await app.inject({ url: '/rest/api/v1/ip', headers: { host: 'localhost:8080' } });
      assert.equal(onBase.statusCode, 200);
    } finally {
      await app.close();
    }
  });
});
