// Parser, allow-list and path policy tables (docs/protocols/reverse-proxy.md §1, §2, §8.1); the address
// guard is tested in infra/egress/client.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_ALLOW } from './config.ts';
import { decide } from './policy.ts';
import { AllowList, parseTarget, TargetError } from './target.ts';

const opts = { maxLength: 2048, allowHttp: true };
const allow = new AllowList(DEFAULT_ALLOW);

/** The status the proxy answers for a raw target before any upstream request. */
function verdict(raw: string, method = 'GET'): number {
  try {
    const t = parseTarget(raw, opts);
    if (!allow.has(t.host)) return 403;
    const d = decide(t.host, method, t.url, { receivePack: false, apiGithub: false });
    return d.ok ? 200 : d.status;
  } catch (err) {
    if (err instanceof TargetError) return err.status;
    throw err;
  }
}

describe('proxy target parser', () => {
  for (const raw of [
    '/github.com/o/r/archive/x.tar.gz',
    '/https://github.com/o/r/archive/x',
    '/https:/github.com/o/r/archive/x',
    '/GitHub.COM/o/r/archive/x',
    '/http://github.com/o/r/archive/x',
  ]) {
    it(`accepts ${raw}`, () => {
      const t = parseTarget(raw, opts);
      assert.equal(t.host, 'github.com');
      assert.equal(
        t.url.href,
        'https://github.com/o/r/archive/x'.replace('/x', raw.endsWith('.tar.gz') ? '/x.tar.gz' : '/x'),
      );
    });
  }

  it('keeps the path and query byte for byte', () => {
    const t = parseTarget('/pypi.org/simple/a%2Fb/?x=1+2&y=%3F', opts);
    assert.equal(t.rest, '/simple/a%2Fb/?x=1+2&y=%3F');
    assert.equal(`${t.url.pathname}${t.url.search}`, '/simple/a%2Fb/?x=1+2&y=%3F');
  });

  const table: [string, string, number][] = [
    ['suffix trick', '/github.com.evil.com/x', 403],
    ['userinfo', '/github.com@evil.com/x', 400],
    ['backslash userinfo', '/evil.com\\@github.com/x', 400],
    ['port', '/github.com:22/x', 400],
    ['trailing dot', '/github.com./o/r/archive/x', 400],
    ['empty label', '/github..com/x', 400],
    ['fullwidth letters', '/\uff47\uff49\uff54\uff48\uff55\uff42.com/x', 400],
    ['fullwidth percent-encoded', '/%EF%BD%87ithub.com/x', 400],
    ['encoded dot', '/github%2Ecom/x', 400],
    ['hex IPv4', '/0x7f.1/x', 400],
    ['decimal IPv4', '/2130706433/x', 400],
    ['dotted IPv4', '/127.0.0.1/x', 400],
    ['IPv6 literal', '/[::1]/x', 400],
    ['CR LF in path', '/github.com/o/r/archive/x\r\nHost: evil', 400],
    ['NUL in path', '/github.com/o/r/archive/x\x00', 400],
    ['TAB in path', '/github.com/o/r/archive/\tx', 400],
    ['no host', '/', 400],
    ['single label', '/localhost/x', 400],
    ['not allow-listed', '/evil.com/x', 403],
    ['prefix match attempt', '/notgithub.com/x', 403],
    ['wildcard base alone is not a subdomain', '/debian.org/debian/x', 403],
    [
      'encoded dot-dot escapes the release path',
      '/github.com/o/r/releases/download/%2e%2e/%2e%2e/login',
      403,
    ],
    ['dot-dot escapes the release path', '/github.com/o/r/releases/download/../../../login', 403],
    ['GitHub web page', '/github.com/o/r', 403],
    ['GitHub login', '/github.com/login', 403],
    ['push is off', '/github.com/o/r/info/refs?service=git-receive-pack', 403],
    ['push POST is off', '/github.com/o/r/git-receive-pack', 403],
    ['PyPI outside /simple', '/pypi.org/account/login/', 403],
    ['Debian outside /debian', '/deb.debian.org/etc/passwd', 403],
    ['api.github.com off by default', '/api.github.com/repos/o/r', 403],
    ['gravatar outside /avatar', '/secure.gravatar.com/site/login', 403],
    ['too long', `/github.com/${'a'.repeat(3000)}`, 400],
  ];
  for (const [name, raw, status] of table) {
    it(`refuses ${name} with ${status}`, () => assert.equal(verdict(raw), status));
  }

  it('answers 405 for POST on download paths and GET on upload-pack', () => {
    assert.equal(verdict('/github.com/o/r/releases/download/v1/a', 'POST'), 405);
    assert.equal(verdict('/github.com/o/r/git-upload-pack', 'GET'), 405);
    assert.equal(verdict('/deb.debian.org/debian/dists/bookworm/Release', 'DELETE'), 405);
  });

  it('allows what git, apt, pip and downloads need', () => {
    for (const raw of [
      '/github.com/o/r/info/refs?service=git-upload-pack',
      '/github.com/o/r.git/info/refs?service=git-upload-pack',
      '/github.com/o/r/releases/latest/download/a.zip',
      '/github.com/o/r/blob/main/x',
      '/raw.githubusercontent.com/o/r/main/x',
      '/codeload.github.com/o/r/tar.gz/v1',
      '/deb.debian.org/debian/pool/main/x.deb',
      '/security.debian.org/debian-security/dists/bookworm-security/InRelease',
      '/pypi.org/simple/pkg/',
      '/files.pythonhosted.org/packages/aa/bb/x.whl',
      '/secure.gravatar.com/avatar/abc?s=80',
    ])
      assert.equal(verdict(raw), 200, raw);
    assert.equal(verdict('/github.com/o/r/git-upload-pack', 'POST'), 200);
    assert.equal(verdict('/github.com/o/r.git/info/lfs/objects/batch', 'POST'), 200);
  });

  it('serves GitHub blob URLs from raw', () => {
    const t = parseTarget('/github.com/o/r/blob/main/a/b.txt', opts);
    const d = decide(t.host, 'GET', t.url, { receivePack: false, apiGithub: false });
    assert.ok(d.ok && d.route.path === '/o/r/raw/main/a/b.txt');
  });

  it('matches wildcards on label boundaries only', () => {
    const a = new AllowList(['*.example.com', 'exact.org']);
    assert.ok(a.has('a.example.com'));
    assert.ok(a.has('a.b.example.com'));
    assert.ok(!a.has('example.com'));
    assert.ok(!a.has('badexample.com'));
    assert.ok(!a.has('exact.org.evil.com'));
    assert.ok(!a.has('sub.exact.org'));
  });

  it('allows upstream URLs only over https on an allowed name, without port, userinfo or IP literal', () => {
    const a = new AllowList(['*.example.com', 'exact.org', '127.0.0.1']);
    assert.ok(a.allowsUrl(new URL('https://exact.org/x?y=1')));
    assert.ok(a.allowsUrl(new URL('https://cdn.example.com/blob')));
    for (const u of [
      'http://exact.org/x',
      'https://exact.org:8443/x',
      'https://u:p@exact.org/x',
      'https://127.0.0.1/x',
      'https://exact.org./x',
      'https://other.org/x',
    ])
      assert.equal(a.allowsUrl(new URL(u)), false, u);
  });
});
