// The proxy's fixed config names (scripts outside this repo use them) and their validation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../config.ts';
import { parseResolve } from '../../infra/egress/netguard.ts';

describe('proxy config', () => {
  it('reads DEVUTIL_PROXY_RESOLVE, DEVUTIL_PROXY_UPSTREAM_CA and DEVUTIL_PROXY_ALLOW', () => {
    const { config } = loadConfig({
      env: {
        DEVUTIL_PROXY_RESOLVE: 'github.com=127.0.0.1:8443, pypi.org=[::1]:9443',
        DEVUTIL_PROXY_UPSTREAM_CA: '/tmp/ca.pem',
        DEVUTIL_PROXY_ALLOW: 'github.com,*.example.com',
      },
    });
    assert.deepEqual(config.proxy.allow, ['github.com', '*.example.com']);
    assert.equal(config.proxy.upstreamCa, '/tmp/ca.pem');
    const r = parseResolve(config.proxy.resolve);
    assert.deepEqual(r.get('github.com'), { address: '127.0.0.1', port: 8443 });
    assert.deepEqual(r.get('pypi.org'), { address: '::1', port: 9443 });
  });

  for (const [name, value] of [
    ['DEVUTIL_PROXY_RESOLVE', 'github.com=localhost:443'],
    ['DEVUTIL_PROXY_RESOLVE', 'github.com=127.0.0.1'],
    ['DEVUTIL_PROXY_ALLOW', 'github.com/x'],
    ['DEVUTIL_PROXY_ALLOW', '*'],
    ['DEVUTIL_PROXY_CLIENTS', '10.0.0.0/99'],
    ['DEVUTIL_PROXY_SECRET', 'short'],
  ] as const) {
    it(`refuses ${name}=${value} naming the variable`, () => {
      assert.throws(
        () => loadConfig({ env: { [name]: value } }),
        (err: unknown) => err instanceof ConfigError && err.message.includes(name),
      );
    });
  }
});
