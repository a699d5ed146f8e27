// The outbound settings (section egress): the proxy and NO_PROXY that other programs share
// (HTTPS_PROXY, NO_PROXY) are read only when nothing of devutil's sets them; the relay's former proxy
// setting still sets the one proxy; bad values stop start-up naming the variable they came from.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../test/helpers/server.ts';
import { describeConfig, loadConfig } from './config.ts';

const egress = (env: Record<string, string>, file?: string) =>
  loadConfig({ env, ...(file ? { file } : {}) }).config.egress;

describe('egress config', () => {
  it('takes HTTPS_PROXY, else HTTP_PROXY, and NO_PROXY when nothing else sets them', () => {
    assert.equal(egress({ HTTPS_PROXY: 'proxy.corp:3128' }).proxy, 'http://proxy.corp:3128');
    assert.equal(egress({ http_proxy: 'http://p.corp:8080/' }).proxy, 'http://p.corp:8080');
    assert.equal(egress({ HTTPS_PROXY: '', HTTP_PROXY: 'http://p.corp:8080' }).proxy, 'http://p.corp:8080');
    assert.deepEqual(egress({ no_proxy: 'localhost, .corp,10.0.0.0/8' }).noProxy, [
      'localhost',
      '.corp',
      '10.0.0.0/8',
    ]);
    assert.equal(egress({}).proxy, '');
  });

  it('lets DEVUTIL_EGRESS_* and the config file win over the shared variables', () => {
    const shared = { HTTPS_PROXY: 'http://ambient:3128', NO_PROXY: '*' };
    const dir = tempDir('devutil-egress-config-');
    const file = join(dir, 'devutil.json');
    writeFileSync(file, JSON.stringify({ egress: { proxy: 'http://from-file:3128', noProxy: ['.corp'] } }));
    assert.equal(egress(shared, file).proxy, 'http://from-file:3128');
    assert.deepEqual(egress(shared, file).noProxy, ['.corp']);
    const env = { ...shared, DEVUTIL_EGRESS_PROXY: 'http://ops:pw@mine:3128', DEVUTIL_EGRESS_NO_PROXY: '' };
    assert.equal(egress(env, file).proxy, 'http://ops:pw@mine:3128');
    assert.deepEqual(egress(env, file).noProxy, []);
  });

  it('reads the relay’s former proxy setting into the one proxy, with a warning', () => {
    const { config, warnings } = loadConfig({
      env: { DEVUTIL_TELEGRAM_PROXY_URL: 'http://ops:pw@127.0.0.1:3128', HTTPS_PROXY: 'http://ambient:1' },
    });
    assert.equal(config.egress.proxy, 'http://ops:pw@127.0.0.1:3128');
    assert.deepEqual(warnings, [
      'DEVUTIL_TELEGRAM_PROXY_URL is deprecated: use DEVUTIL_EGRESS_PROXY instead',
    ]);
  });

  it('masks the proxy password when printing the config', () => {
    const { config } = loadConfig({ env: { DEVUTIL_EGRESS_PROXY: 'http://ops:pw@p:3128' } });
    assert.equal(describeConfig(config)['egress']?.['proxy'], '********');
  });

  it('refuses bad values at start-up, naming the variable they came from', () => {
    assert.throws(
      () =>
        loadConfig({ env: { HTTPS_PROXY: 'socks5://p:1080', DEVUTIL_EGRESS_ALLOW_CIDRS: '10.0.0.0/33,x' } }),
      (e: Error) => {
        assert.match(
          e.message,
          /HTTPS_PROXY: expected an http:\/\/ or https:\/\/ proxy \(socks5 is not supported\)/,
        );
        assert.match(e.message, /DEVUTIL_EGRESS_ALLOW_CIDRS: "10\.0\.0\.0\/33": bad prefix length/);
        return true;
      },
    );
    assert.throws(() => loadConfig({ env: { DEVUTIL_EGRESS_NO_PROXY: 'a b' } }), /DEVUTIL_EGRESS_NO_PROXY/);
  });
});
