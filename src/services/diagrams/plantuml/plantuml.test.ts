// Real rendering through the real engine: one server (and one worker pool) for the whole file.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import plantumlEncoder from 'plantuml-encoder';
import {
  FRAGMENT,
  type IncludeServer,
  startIncludeServer,
} from '../../../../test/fixtures/plantuml/include-server.ts';
import { assertNoInternals } from '../../../../test/helpers/leaks.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { encodeDiagram } from './encoding.ts';
import { detectJava } from './java.ts';

const CORPUS = new URL('../../../../test/fixtures/plantuml/corpus/', import.meta.url);
const corpus = readdirSync(CORPUS)
  .filter((f) => f.endsWith('.puml'))
  .map((f) => [f, readFileSync(new URL(f, CORPUS), 'utf8')] as const);
const hex = (s: string) => `~h${Buffer.from(s, 'utf8').toString('hex')}`;
const HELLO = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000'; // Bob -> Alice : hello
const BROKEN = '@startuml\nBob -> Alice : hello\nthis is not plantuml (\n@enduml';
const INC = 'http://include.test';

describe('PlantUML server API', { skip: toolSkip('java', ['-version']) }, () => {
  let app: FastifyInstance;
  let inc: IncludeServer;
  before(async () => {
    inc = await startIncludeServer();
    app = await buildTestServer({
      overrides: {
        // The server fetches URL includes through its address guard: the fixture is reached by an
        // override; inside.test is allow-listed but points at a private address.
        egress: { resolve: [`include.test=${new URL(inc.url).host}`, 'inside.test=10.0.0.1:80'] },
        diagrams: {
          workers: 2,
          // Nothing here is about the deadline: a C4 render took over the default 10 s at load 30.
          timeoutMs: 60_000,
          urlAllowlist: [`${INC}/allowed/`, 'http://inside.test/'],
          includeTtlSec: 0,
        },
      },
    });
  });
  after(async () => {
    await app?.close();
    await inc?.close();
  });

  const post = (url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url,
      payload,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
    });

  it('serves the server URL /plantuml/svg/<encoded> with the server headers', async () => {
    const r = await app.inject({ url: `/plantuml/svg/${HELLO}` });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.match(r.body, /^<svg[^>]*>/);
    assert.match(r.body, /Alice/);
    assert.equal(r.headers['cache-control'], 'public, max-age=432000');
    assert.equal(r.headers['access-control-allow-origin'], '*');
    assert.match(r.headers.etag as string, /^"[0-9a-f]{32}[0-9A-Za-z_-]+"$/);
    assert.equal(r.headers['x-plantuml-diagram-description'], '(2 participants)');
    assert.match(r.headers['x-powered-by'] as string, /^PlantUML Version 1\.\d+/);
    assert.ok(r.headers['last-modified']);
  });

  for (const [name, text] of corpus) {
    it(`renders ${name} in png, svg and txt`, async () => {
      const enc = plantumlEncoder.encode(text);
      const png = await app.inject({ url: `/plantuml/png/${enc}` });
      assert.equal(png.statusCode, 200, png.body.slice(0, 200));
      assert.equal(png.headers['content-type'], 'image/png');
      assert.deepEqual(
        png.rawPayload.subarray(0, 8),
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      );
      const svg = await app.inject({ url: `/plantuml/svg/${enc}` });
      assert.equal(svg.statusCode, 200);
      assert.match(svg.body, /<svg[\s>]/);
      assert.equal(svg.headers['x-plantuml-diagram-error'], undefined);
      const txt = await app.inject({ url: `/plantuml/txt/${enc}` });
      assert.equal(txt.statusCode, 200, txt.body.slice(0, 200));
      assert.equal(txt.headers['content-type'], 'text/plain;charset=UTF-8');
      assert.ok(txt.body.trim().length > 0);
    });
  }

  it('decodes plantuml-encoder, server-encoded and hand-made ~h URLs of one diagram to the same image', async () => {
    const text = readFileSync(new URL('unicode.puml', CORPUS), 'utf8');
    const urls = [
      plantumlEncoder.encode(text),
      encodeDiagram(text),
      hex(text),
      hex(text).toUpperCase().replace('~H', '~h'),
    ];
    const bodies = await Promise.all(urls.map((u) => app.inject({ url: `/plantuml/txt/${u}` })));
    for (const b of bodies) assert.equal(b.statusCode, 200);
    assert.match(bodies[0]!.body, /Grüße, 你好, привет/);
    for (const b of bodies) assert.equal(b.body, bodies[0]!.body);
    const coder = await app.inject({ url: `/plantuml/coder/${hex(text)}` });
    assert.equal(coder.body, text);
  });

  it('answers POST exactly like GET, with a UTF-8 body whatever the charset says', async () => {
    const text = readFileSync(new URL('unicode.puml', CORPUS), 'utf8');
    const get = await app.inject({ url: `/plantuml/svg/${plantumlEncoder.encode(text)}` });
    const viaPost = await post('/plantuml/svg', text.replace(/\n/g, '\r\n'), {
      'content-type': 'text/plain',
    });
    assert.equal(viaPost.statusCode, 200);
    assert.equal(viaPost.body, get.body);
    assert.equal(viaPost.headers.etag, get.headers.etag);
  });

  for (const fmt of ['png', 'svg', 'txt']) {
    it(`answers a syntax error in ${fmt} with 400, the error image and the error headers`, async () => {
      const r = await app.inject({ url: `/plantuml/${fmt}/${plantumlEncoder.encode(BROKEN)}` });
      assert.equal(r.statusCode, 400);
      assert.equal(r.headers['x-plantuml-diagram-description'], '(Error)');
      assert.match(r.headers['x-plantuml-diagram-error'] as string, /Syntax Error/);
      assert.equal(r.headers['x-plantuml-diagram-error-line'], '2'); // 0-based from @startuml, as the server
      if (fmt === 'png') assert.equal(r.rawPayload.subarray(1, 4).toString(), 'PNG');
      if (fmt === 'svg') assert.match(r.body, /<svg[\s>]/);
      if (fmt === 'txt') assert.match(r.body, /Syntax Error/);
    });
  }

  it('answers 304 to If-None-Match with the ETag, and renders again for another source', async () => {
    const first = await app.inject({ url: `/plantuml/png/${HELLO}` });
    const etag = first.headers.etag as string;
    const again = await app.inject({ url: `/plantuml/png/${HELLO}`, headers: { 'if-none-match': etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers.etag, etag);
    const other = await app.inject({
      url: `/plantuml/png/${encodeDiagram('A -> B')}`,
      headers: { 'if-none-match': etag },
    });
    assert.equal(other.statusCode, 200);
    // RFC 9110, not plantuml-server: If-Modified-Since is ignored beside If-None-Match (13.1.3),
    // and a list names a tag only as a whole member (8.8.3.2), never as a substring.
    const ignored = await app.inject({
      url: `/plantuml/png/${HELLO}`,
      headers: { 'if-none-match': etag, 'if-modified-since': 'Mon, 01 Jan 2001 00:00:00 GMT' },
    });
    assert.equal(ignored.statusCode, 304);
    const inside = await app.inject({
      url: `/plantuml/png/${HELLO}`,
      headers: { 'if-none-match': `"x${etag}"` },
    });
    assert.equal(inside.statusCode, 200);
    const since = await app.inject({
      url: `/plantuml/png/${HELLO}`,
      headers: { 'if-modified-since': new Date(Date.now() + 60_000).toUTCString() },
    });
    assert.equal(since.statusCode, 304, 'the engine is older than the date');
    const before = await app.inject({
      url: `/plantuml/png/${HELLO}`,
      headers: { 'if-modified-since': 'Mon, 01 Jan 2001 00:00:00 GMT' },
    });
    assert.equal(before.statusCode, 200);
    const failed = await app.inject({ url: `/plantuml/png/${HELLO}`, headers: { 'if-match': '"other"' } });
    assert.equal(failed.statusCode, 412);
  });

  it('counts the page index across newpage and blocks; past the end is 400', async () => {
    const text =
      '@startuml\nA -> B : one\nnewpage\nC -> D : two\n@enduml\n@startuml\nE -> F : three\n@enduml';
    const enc = encodeDiagram(text);
    const pages = await Promise.all([0, 1, 2].map((i) => app.inject({ url: `/plantuml/txt/${i}/${enc}` })));
    assert.deepEqual(
      pages.map((p) => p.statusCode),
      [200, 200, 200],
    );
    assert.match(pages[0]!.body, /one/);
    assert.match(pages[1]!.body, /two/);
    assert.match(pages[2]!.body, /three/);
    const past = await app.inject({ url: `/plantuml/txt/3/${enc}` });
    assert.equal(past.statusCode, 400);
    const viaPost = await post('/plantuml/txt/1', text);
    assert.equal(viaPost.body, pages[1]!.body);
  });

  it('refuses !include /etc/passwd: an error image, never the file', async () => {
    for (const fmt of ['txt', 'svg']) {
      const r = await post(`/plantuml/${fmt}`, '@startuml\n!include /etc/passwd\nA -> B\n@enduml');
      assert.equal(r.statusCode, 400);
      assert.match(r.headers['x-plantuml-diagram-error'] as string, /cannot include/i);
      assert.doesNotMatch(r.body, /root:x?:0/);
    }
  });

  it('keeps an error message that quotes non-ASCII source header-safe', async () => {
    const r = await post(
      '/plantuml/svg',
      '@startuml\n!include /tmp/ünïcödé✓\\r\\nX-Evil: 1\nA -> B\n@enduml',
    );
    assert.equal(r.statusCode, 400);
    const msg = r.headers['x-plantuml-diagram-error'] as string;
    assert.match(msg, /cannot include/i);
    assert.match(msg, /^[\x20-\x7e]+$/);
    assert.equal(r.headers['x-evil'], undefined);
  });

  // Includes of local files are refused (400); %getenv and %load_json render with nothing read.
  const etcHostname = readFileSync('/etc/hostname', 'utf8')
    .trim()
    .replace(/[^\w-]/g, '.');
  const localReads: [string, number, RegExp][] = [
    ['!include ../../../../../../etc/hostname', 400, new RegExp(`\\b${etcHostname}\\b`)],
    ['!includesub /etc/passwd!X', 400, /root:/],
    ['!include DevutilPlantumlWorker.class', 400, /cafebabe|CAFEBABE/],
    ['!import /etc/passwd', 400, /root:/],
    ['Alice -> Bob : %getenv("HOME") %getenv("PATH")', 200, /\/root|\/usr\/bin/],
    ['!$j = %load_json("/etc/os-release")\nAlice -> Bob : $j', 200, /debian|PRETTY_NAME/i],
  ];
  for (const [line, status, secret] of localReads) {
    it(`confines local reads: ${line.split('\n')[0]}`, async () => {
      const r = await post('/plantuml/txt', `@startuml\n${line}\nA -> B\n@enduml`);
      assert.equal(r.statusCode, status);
      assert.doesNotMatch(r.body, secret);
    });
  }

  it('refuses URL includes outside the allow-list without fetching them, and fetches allowed ones', async () => {
    const denied = [
      `${inc.url}/denied/x.puml`,
      'http://intranet.example.com/x.puml',
      'https://example.com/x.puml',
    ];
    for (const u of denied) {
      const r = await post('/plantuml/txt', `@startuml\n!include ${u}\nA -> B\n@enduml`);
      assert.equal(r.statusCode, 400, u);
      assert.ok(r.headers['x-plantuml-diagram-error'], u);
    }
    const viaVariable = await post(
      '/plantuml/txt',
      `@startuml\n!$u = "${inc.url}/denied/y.puml"\n!include $u\n@enduml`,
    );
    assert.equal(viaVariable.statusCode, 400);
    assert.equal(inc.hits.get('/denied/x.puml'), undefined);
    assert.equal(inc.hits.get('/denied/y.puml'), undefined);

    const ok = await post('/plantuml/txt', `@startuml\n!include ${INC}/allowed/frag.puml\nA -> B\n@enduml`);
    assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
    assert.match(ok.body, /Carol/);
    assert.ok((inc.hits.get('/allowed/frag.puml') ?? 0) >= 1);
    assert.ok(FRAGMENT.includes('Carol'));
  });

  it('re-renders a diagram whose include changed, and revalidates an unchanged one with a conditional GET', async () => {
    const path = '/allowed/changing.puml';
    inc.files.set(path, 'Bob -> Carol : first version\n');
    const url = `/plantuml/txt/${plantumlEncoder.encode(`@startuml\n!include ${INC}${path}\nA -> B\n@enduml`)}`;
    const first = await app.inject({ url });
    assert.equal(first.statusCode, 200, first.body.slice(0, 300));
    assert.match(first.body, /first version/);
    const etag = first.headers.etag as string;
    assert.ok(etag);

    // Unchanged upstream: served from the cache after a conditional GET answered 304.
    const downloads = (inc.hits.get(path) ?? 0) - (inc.notModified.get(path) ?? 0);
    const asked = inc.conditional.get(path) ?? 0;
    const again = await app.inject({ url });
    assert.equal(again.headers['x-plantuml-cache'], 'hit');
    assert.equal(again.headers.etag, etag);
    assert.ok((inc.conditional.get(path) ?? 0) > asked, 'the include was revalidated');
    assert.equal(
      (inc.hits.get(path) ?? 0) - (inc.notModified.get(path) ?? 0),
      downloads,
      'not downloaded again',
    );
    const revalidated = await app.inject({ url, headers: { 'if-none-match': etag } });
    assert.equal(revalidated.statusCode, 304);

    // Changed upstream: the same URL renders the new content under a new ETag.
    inc.files.set(path, 'Bob -> Carol : second version\n');
    const changed = await app.inject({ url, headers: { 'if-none-match': etag } });
    assert.equal(changed.statusCode, 200);
    assert.equal(changed.headers['x-plantuml-cache'], 'miss');
    assert.match(changed.body, /second version/);
    assert.doesNotMatch(changed.body, /first version/);
    assert.notEqual(changed.headers.etag, etag);
  });

  it('refuses an allow-listed include whose host has a private address with the engine error', async () => {
    const r = await post('/plantuml/txt', '@startuml\n!include http://inside.test/x.puml\nA -> B\n@enduml');
    assert.equal(r.statusCode, 400);
    assert.match(r.headers['x-plantuml-diagram-error'] as string, /cannot open url/i);
  });

  // Every directive that reads a URL goes through the server (and so through its guard and cache).
  const urlReads: [string, string, string, RegExp][] = [
    ['!includeurl', '/allowed/legacy.puml', 'Bob -> Carol : legacy\n', /legacy/],
    ['!include_many', '/allowed/many.puml', 'Bob -> Carol : many\n', /many/],
    ['%load_json', '/allowed/data.json', '{"who": "json-carol"}', /json-carol/],
  ];
  for (const [directive, path, content, shows] of urlReads) {
    it(`reads ${directive} through the server`, async () => {
      inc.files.set(path, content);
      const line =
        directive === '%load_json'
          ? `!$j = %load_json("${INC}${path}")\nBob -> Carol : $j.who`
          : `${directive} ${INC}${path}`;
      const r = await post('/plantuml/txt', `@startuml\n${line}\nA -> B\n@enduml`);
      assert.equal(r.statusCode, 200, `${r.headers['x-plantuml-diagram-error']}`);
      assert.match(r.body, shows);
      assert.ok((inc.hits.get(path) ?? 0) >= 1);
    });
  }

  it('serves the standard library (<C4/...>) under the default profile', async () => {
    const r = await post('/plantuml/svg', readFileSync(new URL('c4-stdlib.puml', CORPUS), 'utf8'));
    assert.equal(r.statusCode, 200);
    assert.match(r.body, /Container|API/);
  });

  it('serves /check, /map, /base64, /coder, /language and the dark variant', async () => {
    const check = await app.inject({ url: `/plantuml/check/${HELLO}` });
    assert.equal(check.body, '(2 participants)');
    const map = await app.inject({
      url: `/plantuml/map/${encodeDiagram('class A [[https://example.com/a]]')}`,
    });
    assert.match(map.body, /<map id="plantuml_map"[\s\S]*href="https:\/\/example.com\/a"/);
    const b64 = await app.inject({ url: `/plantuml/base64/${HELLO}` });
    assert.equal(b64.headers['content-type'], 'text/plain; charset=x-user-defined');
    assert.match(b64.body, /^data:image\/png;base64,iVBORw0KGgo[A-Za-z0-9+/=]+$/);
    const coder = await post('/plantuml/coder', 'Bob -> Alice : hello');
    assert.equal(coder.body, HELLO);
    const lang = await app.inject({ url: '/plantuml/language' });
    assert.equal(lang.statusCode, 200);
    assert.match(lang.body, /^participant$/m);
    const light = await app.inject({ url: `/plantuml/svg/${HELLO}` });
    const dark = await app.inject({ url: `/plantuml/dsvg/${HELLO}` });
    assert.equal(dark.statusCode, 200);
    assert.notEqual(dark.body, light.body);
    const header = await app.inject({
      url: `/plantuml/svg/${HELLO}`,
      headers: { 'x-preferred-color-mapper': 'dark' },
    });
    assert.equal(header.body, dark.body);
  });

  it('serves EPS and takes a URL-encoded ~h segment', async () => {
    const eps = await app.inject({ url: `/plantuml/eps/${HELLO}` });
    assert.equal(eps.statusCode, 200);
    assert.equal(eps.headers['content-type'], 'application/postscript');
    assert.match(eps.body, /^%!PS/);
    const encoded = await app.inject({ url: `/plantuml/txt/%7E${hex('A -> B : tilde').slice(1)}` });
    assert.equal(encoded.statusCode, 200);
    assert.match(encoded.body, /tilde/);
  });

  it('crops PNG at the 4096 px limit but leaves SVG whole', async () => {
    const text = `@startuml\n${Array.from({ length: 120 }, (_, i) => `participant Participant${i}`).join('\n')}\n@enduml`;
    const png = await post('/plantuml/png', text);
    assert.equal(png.statusCode, 200);
    assert.ok(png.rawPayload.readUInt32BE(16) <= 4096, `png width ${png.rawPayload.readUInt32BE(16)}`);
    const svg = await post('/plantuml/svg', text);
    const width = Number(/width="(\d+)px"/.exec(svg.body)?.[1]);
    assert.ok(width > 4096, `svg width ${width}`);
  });

  it('answers PDF on Java 21+, and 501 with the reason on older Java', async () => {
    // Which answer is right depends on this machine's Java, asked here, not on the answer itself.
    const { major = 0 } = await detectJava(app.ctx.config.diagrams.java);
    const r = await app.inject({ url: `/plantuml/pdf/${HELLO}` });
    if (major >= 21) {
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['content-type'], 'application/pdf');
      assert.equal(r.rawPayload.subarray(0, 5).toString(), '%PDF-');
    } else {
      assert.equal(r.statusCode, 501);
      assert.match(r.body, /Java 21/);
    }
  });

  it("serves Kroki's routes: base64url GET, POST with Accept and JSON POST", async () => {
    const { deflateSync } = await import('node:zlib');
    const kroki = deflateSync('A -> B : kroki', { level: 9 }).toString('base64url');
    const get = await app.inject({ url: `/plantuml/plantuml/svg/${kroki}` });
    assert.equal(get.statusCode, 200);
    assert.match(get.body, /kroki/);
    const accept = await post('/plantuml/plantuml', 'A -> B : kroki', { accept: 'image/png' });
    assert.equal(accept.headers['content-type'], 'image/png');
    const json = await app.inject({
      method: 'POST',
      url: '/plantuml/',
      payload: { diagram_source: 'A -> B : kroki', diagram_type: 'plantuml', output_format: 'svg' },
    });
    assert.equal(json.body, get.body);
    const bad = await post('/plantuml/plantuml/svg', BROKEN);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /\(line: 3\)/);
  });

  it('serves the editor page and turns the form POST into a /uml/<encoded> redirect', async () => {
    const page = await app.inject({ url: `/plantuml/uml/${HELLO}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Bob -&gt; Alice : hello/);
    assert.match(page.body, new RegExp(`/plantuml/svg/${HELLO}`));
    const form = await app.inject({
      method: 'POST',
      url: '/plantuml/form',
      payload: 'text=Bob+-%3E+Alice+%3A+hello',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.statusCode, 302);
    assert.match(form.headers.location as string, new RegExp(`/plantuml/uml/${HELLO}$`));
  });

  // Every SVG and HTML the service answers runs nothing and loads nothing foreign when opened directly.
  const active = `@startuml\nBob -> Alice : [[javascript:alert(1) click]]\n@enduml`;
  const csp: [
    string,
    () => Promise<{ statusCode: number; headers: Record<string, unknown> }>,
    'svg' | 'html',
  ][] = [
    ['GET svg', () => app.inject({ url: `/plantuml/svg/${HELLO}` }), 'svg'],
    ['GET dark svg', () => app.inject({ url: `/plantuml/dsvg/${HELLO}` }), 'svg'],
    ['GET svg with a link in the diagram', () => app.inject({ url: `/plantuml/svg/${hex(active)}` }), 'svg'],
    ['POST svg', () => post('/plantuml/svg', 'Bob -> Alice : hello'), 'svg'],
    ['the svg error image', () => post('/plantuml/svg', BROKEN), 'svg'],
    ['Kroki GET svg', () => app.inject({ url: `/plantuml/plantuml/svg/${HELLO}` }), 'svg'],
    [
      'Kroki JSON POST',
      () =>
        app.inject({
          method: 'POST',
          url: '/plantuml/',
          payload: { diagram_source: 'A -> B', output_format: 'svg' },
        }),
      'svg',
    ],
    ['the editor page', () => app.inject({ url: `/plantuml/uml/${HELLO}` }), 'html'],
    ['the empty editor', () => app.inject({ url: '/plantuml/uml' }), 'html'],
  ];
  for (const [name, send, kind] of csp) {
    it(`answers ${name} with a Content-Security-Policy that runs no script`, async () => {
      const r = await send();
      assert.ok(r.statusCode === 200 || r.statusCode === 400, String(r.statusCode));
      assert.match(String(r.headers['content-type']), kind === 'svg' ? /^image\/svg\+xml/ : /^text\/html/);
      const policy = String(r.headers['content-security-policy'] ?? '');
      assert.match(policy, /default-src 'none'/);
      assert.doesNotMatch(policy, /script-src|unsafe-eval/);
      if (kind === 'svg') assert.match(policy, /sandbox(?! allow-scripts)/);
      else assert.match(policy, /frame-ancestors 'none'/);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
    });
  }

  const hostile: [string, string, number][] = [
    ['bad encoding', '/plantuml/svg/!!!!', 400],
    ['path traversal', '/plantuml/svg/..%2F..%2Fetc%2Fpasswd', 400],
    ['odd ~h', '/plantuml/png/~habc', 400],
    ['~1 encoding', `/plantuml/png/~1${HELLO}`, 400],
    ['unknown format', `/plantuml/exe/${HELLO}`, 404],
    ['negative index', `/plantuml/png/-1/${HELLO}`, 404],
    ['huge index', `/plantuml/png/99999999/${HELLO}`, 404],
    ['CRLF in format', `/plantuml/png%0d%0aSet-Cookie:x/${HELLO}`, 404],
    ['NUL in source', `/plantuml/txt/${hex('A -> B : \u0000x')}`, 200],
    ['bad percent escape', '/plantuml/svg/%E0%A4%A', 400],
    // /plantuml/:format exists for POST only.
    ['unknown route', '/plantuml/nope', 405],
  ];
  for (const [name, url, status] of hostile) {
    it(`answers ${name} with ${status} and no stack or path`, async () => {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, status, r.body.slice(0, 200));
      assertNoInternals(r.body, url);
      assert.doesNotMatch(r.body, /Exception/);
      assert.equal(r.headers['set-cookie'], undefined);
    });
  }

  it('refuses an oversize POST body with 413 and an empty one with 400', async () => {
    const big = await post('/plantuml/svg', `@startuml\n${'A -> B\n'.repeat(60_000)}@enduml`);
    assert.equal(big.statusCode, 413);
    const empty = await post('/plantuml/svg', '');
    assert.equal(empty.statusCode, 400);
  });

  it('answers wrong methods with 405 and Allow in plain text', async () => {
    const r = await app.inject({ method: 'DELETE', url: `/plantuml/svg/${HELLO}` });
    assert.equal(r.statusCode, 405);
    assert.match(r.headers.allow as string, /GET/);
    assert.match(r.headers['content-type'] as string, /^text\/plain/);
  });

  it('answers concurrent renders (several per worker) each with its own diagram', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `Concurrent${i}`);
    const replies = await Promise.all(names.map((n) => post('/plantuml/txt', `${n} -> Other : ${n}`)));
    replies.forEach((r, i) => {
      assert.equal(r.statusCode, 200);
      assert.match(r.body, new RegExp(`${names[i]}\\b`));
      for (const other of names)
        if (other !== names[i]) assert.doesNotMatch(r.body, new RegExp(`${other}\\b`));
    });
  });

  it('serves a repeated diagram from the cache', async () => {
    const enc = encodeDiagram('A -> B : cached twice');
    const a = await app.inject({ url: `/plantuml/svg/${enc}` });
    const b = await app.inject({ url: `/plantuml/svg/${enc}` });
    assert.equal(a.headers['x-plantuml-cache'], 'miss');
    assert.equal(b.headers['x-plantuml-cache'], 'hit');
    assert.equal(a.body, b.body);
  });

  it('reports the engine in /readyz', async () => {
    const r = await app.inject({ url: '/readyz' });
    const check = r.json().checks.plantuml;
    assert.equal(check.ok, true);
    assert.match(check.detail, /java 1\d|java 2\d/);
  });
});
