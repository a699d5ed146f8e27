// Header filtering both ways and proxy-form links (docs/protocols/reverse-proxy.md §3, §4).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_ALLOW } from './config.ts';
import { requestHeaders, responseHeaders } from './headers.ts';
import { Links } from './links.ts';
import { AllowList } from './target.ts';

describe('proxy headers', () => {
  it('forwards only end-to-end request headers', () => {
    const out = requestHeaders(
      {
        host: 'proxy.example',
        connection: 'keep-alive, x-secret-hop',
        'x-secret-hop': '1',
        'keep-alive': 'timeout=5',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        trailer: 'x',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        expect: '100-continue',
        'proxy-authorization': 'Basic x',
        cookie: 'a=b',
        forwarded: 'for=1.2.3.4',
        'x-forwarded-for': '1.2.3.4',
        'x-real-ip': '1.2.3.4',
        'true-client-ip': '1.2.3.4',
        'cf-connecting-ip': '1.2.3.4',
        origin: 'https://evil.example',
        referer: 'https://evil.example/',
        accept: '*/*',
        range: 'bytes=0-1',
        'git-protocol': 'version=2',
        authorization: 'Basic dTp0',
        'content-type': 'application/x-git-upload-pack-request',
        'content-encoding': 'gzip',
      },
      { withBody: true },
    );
    assert.deepEqual(Object.keys(out).sort(), [
      'accept',
      'authorization',
      'content-encoding',
      'content-type',
      'git-protocol',
      'range',
    ]);
  });

  it('drops body headers on requests without a body', () => {
    const out = requestHeaders(
      { 'content-length': '5', 'content-type': 'text/plain', accept: '*/*' },
      { withBody: false },
    );
    assert.deepEqual(out, { accept: '*/*' });
  });

  it('relays only safe response headers', () => {
    const out = responseHeaders({
      'content-type': 'application/octet-stream',
      'content-length': '10',
      etag: '"x"',
      'set-cookie': ['a=b'],
      'strict-transport-security': 'max-age=1',
      'alt-svc': 'h3=":443"',
      'clear-site-data': '"*"',
      'content-security-policy': "default-src 'self'",
      connection: 'keep-alive',
      'transfer-encoding': 'chunked',
      'retry-after': '5',
    });
    assert.deepEqual(Object.keys(out).sort(), ['content-length', 'content-type', 'etag', 'retry-after']);
  });
});

describe('proxy links', () => {
  const links = new Links('https://p.example/proxy', new AllowList(DEFAULT_ALLOW));
  const from = new URL('https://github.com/o/r/releases/download/v1/a');

  it('rewrites absolute and relative URLs on allowed hosts only', () => {
    assert.equal(links.rewriteHeader('/o/r/x', from), 'https://p.example/proxy/github.com/o/r/x');
    assert.equal(
      links.rewriteHeader('https://objects.githubusercontent.com/a?sig=1', from),
      'https://p.example/proxy/objects.githubusercontent.com/a?sig=1',
    );
    assert.equal(links.rewriteHeader('https://evil.example/x', from), 'https://evil.example/x');
    assert.equal(links.rewriteHeader('http://github.com/x', from), 'http://github.com/x');
  });

  it('rewrites every URL in a Link header', () => {
    assert.equal(
      links.rewriteLink(
        '<https://api.github.com/x?page=2>; rel="next", <https://evil.example/>; rel="x"',
        from,
      ),
      '<https://p.example/proxy/api.github.com/x?page=2>; rel="next", <https://evil.example/>; rel="x"',
    );
  });

  it('never treats IP literals, ports or userinfo as allowed', () => {
    for (const u of [
      'https://127.0.0.1/x',
      'https://github.com:8443/x',
      'https://u:p@github.com/x',
      'https://0x7f.1/x',
    ])
      assert.equal(links.allowed(new URL(u)), false, u);
  });
});
