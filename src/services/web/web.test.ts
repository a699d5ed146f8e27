import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, tempDir } from '../../../test/helpers/server.ts';
import { LANGUAGES } from '../diagrams/kroki/languages.ts';
import { loadOrCreateIdentity } from '../relay/identity.ts';

describe('home page (server side)', () => {
  let app: FastifyInstance;
  let custom: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
    custom = await buildTestServer({
      overrides: {
        server: { publicUrl: 'https://dev.example.com' },
        proxy: { host: 'gh.example.net', allow: ['github.com', '*.debian.org'] },
        diagrams: { publicUrl: 'https://uml.example.org/base' },
        avatar: { host: 'avatars.example.com' },
      },
    });
  });
  after(async () => {
    await app.close();
    await custom.close();
  });

  it('serves / as HTML with the security headers and no caching', async () => {
    const r = await app.inject({ url: '/' });
    assert.equal(r.statusCode, 200);
    assert.match(r.headers['content-type'] as string, /^text\/html; charset=utf-8/);
    const csp = r.headers['content-security-policy'] as string;
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /connect-src 'self';/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['x-frame-options'], 'DENY');
    assert.equal(r.headers['cache-control'], 'no-store');
  });

  it('has no inline script and loads its script and stylesheet from hashed /assets/ names', async () => {
    const body = (await app.inject({ url: '/' })).body;
    const scripts = [...body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 1);
    for (const [, attrs, content] of scripts) {
      assert.equal(content, '', 'a script element with inline code');
      assert.match(attrs ?? '', /src="\/assets\/app-[0-9a-f]{10}\.js"/);
    }
    assert.match(body, /<link rel="stylesheet" href="\/assets\/app-[0-9a-f]{10}\.css">/);
    assert.doesNotMatch(body, /\son[a-z]+=/i, 'inline event handler');
    // Links out are fine (the IP data licence asks for one to DB-IP); loading from elsewhere is not.
    assert.doesNotMatch(
      body,
      /<(?!a\s)[a-z]+\s[^>]*(src|href)="(https?:)?\/\//,
      'an external resource (CDN, font)',
    );
    assert.match(body, /<a href="https:\/\/db-ip\.com">IP Geolocation by DB-IP<\/a>/);
  });

  it('serves the hashed assets immutable with their types, and 404 for anything else', async () => {
    const body = (await app.inject({ url: '/' })).body;
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(body)?.[1];
    const css = /href="(\/assets\/[^"]+\.css)"/.exec(body)?.[1];
    assert.ok(js && css);
    const a = await app.inject({ url: js });
    assert.equal(a.statusCode, 200);
    assert.match(a.headers['content-type'] as string, /^text\/javascript/);
    assert.equal(a.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.ok(a.body.length > 1000);
    const c = await app.inject({ url: css });
    assert.match(c.headers['content-type'] as string, /^text\/css/);
    assert.match(c.body, /prefers-color-scheme:\s*dark/);
    assert.doesNotMatch(c.body, /@import|url\(https?:/, 'external CSS resource');
  });

  it('serves assets brotli or gzip encoded when accepted, identical once decoded', async () => {
    const body = (await app.inject({ url: '/' })).body;
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(body)?.[1] ?? '';
    const plain = await app.inject({ url: js });
    assert.equal(plain.headers['content-encoding'], undefined);
    const br = await app.inject({ url: js, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers.vary, 'accept-encoding');
    assert.ok(br.rawPayload.length < plain.rawPayload.length / 2);
    assert.deepEqual(brotliDecompressSync(br.rawPayload), plain.rawPayload);
    const gz = await app.inject({ url: js, headers: { 'accept-encoding': 'gzip, br;q=0' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gz.rawPayload), plain.rawPayload);
    const page = await app.inject({ url: '/', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(page.headers['content-encoding'], 'gzip');
    assert.match(gunzipSync(page.rawPayload).toString(), /<!doctype html>/);
  });

  it('puts the caller address into the page, gzipped or not: gzip and identity agree', async () => {
    for (const remoteAddress of ['198.51.100.23', '2001:db8::1']) {
      const plain = await app.inject({ url: '/', remoteAddress });
      const gz = await app.inject({ url: '/', remoteAddress, headers: { 'accept-encoding': 'gzip' } });
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.ok(gz.rawPayload.length < plain.rawPayload.length / 3);
      assert.equal(gunzipSync(gz.rawPayload).toString(), plain.body);
      assert.match(plain.body, new RegExp(`<strong id="ip-value">${remoteAddress}</strong>`));
      assert.match(plain.body, /<\/html>\n$/);
    }
    // A caller who comes back gets its own address again, not the last caller's (the gzip is kept per address).
    const again = await app.inject({
      url: '/',
      remoteAddress: '198.51.100.23',
      headers: { 'accept-encoding': 'gzip' },
    });
    assert.match(gunzipSync(again.rawPayload).toString(), /<strong id="ip-value">198\.51\.100\.23<\/strong>/);
    assert.equal(again.headers.vary, 'accept-encoding');
    assert.equal(again.headers['cache-control'], 'no-store');
  });

  it('has no address slot when the IP utility is off', async () => {
    const s = await buildTestServer({ overrides: { ip: { enabled: false } } });
    try {
      const r = await s.inject({ url: '/', remoteAddress: '198.51.100.99' });
      assert.doesNotMatch(r.body, /198\.51\.100\.99/);
      assert.match(r.body, /id="ip"[\s\S]*?not enabled on this server/);
      const gz = await s.inject({ url: '/', headers: { 'accept-encoding': 'gzip' } });
      assert.equal(gunzipSync(gz.rawPayload).toString(), r.body);
    } finally {
      await s.close();
    }
  });

  it('lets the page read the single-stack IP hosts (CSP connect-src), only while the IP utility is on', async () => {
    const ip = { v4Url: 'https://ipv4.example.com', v6Url: 'https://ipv6.example.com:8443/devutil' };
    const on = await buildTestServer({ overrides: { ip } });
    const off = await buildTestServer({ overrides: { ip: { ...ip, enabled: false } } });
    try {
      const r = await on.inject({ url: '/' });
      assert.match(
        r.headers['content-security-policy'] as string,
        /connect-src 'self' https:\/\/ipv4\.example\.com https:\/\/ipv6\.example\.com:8443;/,
      );
      assert.match(r.body, /id="ip-v4" data-url="https:\/\/ipv4\.example\.com"/);
      assert.match(r.body, /id="ip-v6" data-url="https:\/\/ipv6\.example\.com:8443\/devutil"/);
      const o = await off.inject({ url: '/' });
      assert.match(o.headers['content-security-policy'] as string, /connect-src 'self';/);
    } finally {
      await on.close();
      await off.close();
    }
  });

  it('picks the asset coding by q-value, then brotli (infra/http/encoding.ts)', async () => {
    const js = /src="(\/assets\/[^"]+\.js)"/.exec((await app.inject({ url: '/' })).body)?.[1];
    assert.ok(js);
    const coding = async (ae: string) =>
      (await app.inject({ url: js, headers: { 'accept-encoding': ae } })).headers['content-encoding'];
    assert.equal(await coding('gzip;q=1, br;q=0.5'), 'gzip');
    assert.equal(await coding('gzip, br'), 'br');
    assert.equal(await coding('br;q=0, *'), 'gzip');
    assert.equal(await coding('GZIP'), 'gzip');
    assert.equal(await coding('*;q=0'), undefined);
  });

  it('does not reflect the query string or the path into the page', async () => {
    const r = await app.inject({ url: '/?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E&x="><img src=x>' });
    assert.equal(r.statusCode, 200);
    assert.doesNotMatch(r.body, /alert\(1\)|<img src=x>/);
  });

  const hostile = [
    '/assets/app.js',
    '/assets/..%2Fpackage.json',
    '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
    '/assets/manifest.json',
    `/assets/${'a'.repeat(5000)}.js`,
    '/assets/app-0000000000.js%00',
  ];
  for (const url of hostile) {
    it(`answers ${url.slice(0, 50)} with 404 and no file content`, async () => {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 404);
      assert.doesNotMatch(r.body, /"name"|sourceHash|devutil/);
    });
  }

  it('builds every example from the configured public URLs, not the Host header', async () => {
    const r = await custom.inject({ url: '/', headers: { host: 'evil.example' } });
    const body = r.body;
    assert.doesNotMatch(body, /evil\.example/);
    assert.match(body, /curl https:\/\/dev\.example\.com\/rest\/api\/v1\/ip/);
    assert.match(body, /-F file=@report\.txt https:\/\/dev\.example\.com\/api\/file\/report\.txt/);
    assert.match(
      body,
      /curl -fOJ --output-dir downloads --create-dirs https:\/\/dev\.example\.com\/api\/file\/report\.txt/,
    );
    assert.match(body, /git clone https:\/\/gh\.example\.net\/github\.com\//);
    assert.match(body, /deb https:\/\/gh\.example\.net\/deb\.debian\.org\/debian bookworm main/);
    assert.match(body, /pip install --index-url https:\/\/gh\.example\.net\/pypi\.org\/simple/);
    assert.match(body, /https:\/\/uml\.example\.org\/base\/svg\/[0-9A-Za-z_-]+/);
    assert.match(body, /https:\/\/avatars\.example\.com\/avatar\/&lt;hash&gt;\?s=80&amp;d=identicon/);
    assert.doesNotMatch(body, /not enabled on this server/);
    assert.match(body, /data-base="https:\/\/dev\.example\.com"/);
    assert.match(body, /data-allow="github\.com,\*\.debian\.org"/);
    assert.match(body, /href="\/docs"/);
  });

  it('fails (-f) rather than save an error as the file in every example that downloads', async () => {
    const body = (await app.inject({ url: '/' })).body;
    const lines = [...body.matchAll(/<code[^>]*>([\s\S]*?)<\/code>/g)].flatMap((m) =>
      (m[1] ?? '').split('\n'),
    );
    const downloads = lines.filter(
      (l) => /\bcurl\b/.test(l) && /\s-[a-zA-Z]*[oO][a-zA-Z]*\s/.test(` ${l} `) && !/-o \/dev\/null/.test(l),
    );
    assert.ok(downloads.length >= 4, downloads.join('\n'));
    for (const l of downloads) assert.match(l, /(^|\s)(-[a-zA-Z]*f[a-zA-Z]*|--fail)(\s|$)/, l);
    assert.doesNotMatch(
      body,
      /curl [^\n<]*&gt; [\w.]+/,
      'no shell redirection: it creates the file even when curl fails',
    );
  });

  it('says how to keep the owner token from X-Owner-Token in TOKEN', async () => {
    const body = (await app.inject({ url: '/' })).body;
    assert.match(body, /TOKEN=\$\(curl -fsS -D - -o \/dev\/null -F file=@report\.txt /);
    assert.match(body, /x-owner-token:/);
    assert.match(body, /-H &quot;X-Owner-Token: \$TOKEN&quot;/);
  });

  it("shows the relay URI with the relay's real device ID, and what other devices need", async () => {
    const dataDir = tempDir();
    const id = loadOrCreateIdentity(dataDir);
    const s = await buildTestServer({
      overrides: { server: { dataDir, publicUrl: 'https://dev.example.com' }, relay: { port: 22999 } },
    });
    try {
      const body = (await s.inject({ url: '/' })).body;
      const uri = `relay://dev.example.com:22999/?id=${id.deviceId}`;
      assert.ok(body.includes(`<code id="relay-example">default, ${uri}</code>`), 'example');
      assert.ok(body.includes(`id="relay-uri" type="text" readonly value="${uri}"`), 'copy field');
      assert.match(
        body,
        /Other devices connect to <code>dev\.example\.com:22999<\/code>.*DEVUTIL_RELAY_EXT_ADDRESS/,
      );
    } finally {
      await s.close();
    }
    // The default public URL names localhost: the page says other devices cannot use it.
    const local = (await app.inject({ url: '/' })).body;
    assert.match(
      local,
      /names <code>localhost<\/code>, which only this machine can reach.*DEVUTIL_PUBLIC_URL.*DEVUTIL_RELAY_EXT_ADDRESS/,
    );
  });

  it('says the rate limits and where running it in production is described, not "not production"', async () => {
    const body = (await app.inject({ url: '/' })).body;
    assert.doesNotMatch(body, /not production/i);
    assert.match(body, /rate-limited per address/);
    assert.match(body, /docs\/deployment\.md and docs\/operations\.md/);
    // What the page points at exists and covers it (the deployment page's scale-out section, the operations page).
    const root = new URL('../../../', import.meta.url);
    assert.match(
      readFileSync(new URL('docs/deployment.md', root), 'utf8'),
      /^## Running several instances$/m,
    );
    assert.match(readFileSync(new URL('docs/operations.md', root), 'utf8'), /^## Behind a load balancer/m);
  });

  it("shows the diagram languages by name in the editor's picker, with their ids as the values", async () => {
    const body = (await app.inject({ url: '/' })).body;
    const select = /<select id="uml-type">([\s\S]*?)<\/select>/.exec(body)?.[1] ?? '';
    const options = [...select.matchAll(/<option value="([^"]+)"[^>]*>([^<]*)<\/option>/g)].map((m) => [
      m[1],
      m[2],
    ]);
    assert.deepEqual(
      options,
      LANGUAGES.map((l) => [l.type, l.name]),
    );
    const shown = Object.fromEntries(options);
    assert.equal(shown['c4plantuml'], 'C4 model (PlantUML)');
    assert.equal(shown['blockdiag'], 'BlockDiag (block diagrams)');
  });

  it('shows the caller address without JavaScript', async () => {
    const r = await app.inject({ url: '/', remoteAddress: '198.51.100.7' });
    assert.match(r.body, /<strong id="ip-value">198\.51\.100\.7<\/strong>/);
  });

  it('renders buttons that need JavaScript disabled, so a no-JS submit cannot leak the bot key', async () => {
    const body = (await app.inject({ url: '/' })).body;
    const tg = /<button type="submit" id="tg-send"[^>]*>/.exec(body)?.[0];
    assert.ok(tg, 'the Telegram form has its send button');
    assert.match(tg, /disabled/);
    assert.doesNotMatch(body, /<form[^>]*id="telegram-form"[^>]*method="get"/i);
  });

  it('does not expose a configured proxy secret', async () => {
    const s = await buildTestServer({ overrides: { proxy: { secret: 'topsecret-path-1' } } });
    try {
      const body = (await s.inject({ url: '/' })).body;
      assert.doesNotMatch(body, /topsecret-path-1/);
      assert.match(body, /\/t\/&lt;SECRET&gt;\//);
    } finally {
      await s.close();
    }
  });

  it('answers HEAD /, refuses DELETE / with 405 and a POST / that is not a form with 400', async () => {
    const h = await app.inject({ method: 'HEAD', url: '/' });
    assert.equal(h.statusCode, 200);
    assert.equal(h.body, '');
    const d = await app.inject({ method: 'DELETE', url: '/' });
    assert.equal(d.statusCode, 405);
    // POST / takes multipart uploads (files, the transfer.sh way): anything else is the client's error.
    const p = await app.inject({ method: 'POST', url: '/' });
    assert.equal(p.statusCode, 400);
    assert.match(p.body, /^expected multipart\/form-data/);
  });
});
