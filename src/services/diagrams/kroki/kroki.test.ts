// Kroki's API for every language of the registry: the three request shapes, SVG with the sample's
// label, PNG where offered, ETag/304, the CSP, Kroki's error shape, and the engines that are not
// installed (optional system programs) reported by /health instead of failing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../../../../test/helpers/leaks.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';
import { hasTool, missing } from '../../../../test/helpers/tools.ts';
import { externalReferences } from '../engines/svg-refs.ts';
import { LANGUAGES } from './languages.ts';

const kroki = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
// BPMN draws in the headless-browser pool: on where Chromium is (always in CI).
const CHROMIUM = '/usr/bin/chromium';
const browser = hasTool(CHROMIUM)
  ? { mermaidChromium: CHROMIUM, mermaidBrowsers: 1, mermaidBrowserPages: 1 }
  : {};

describe('Kroki API', { timeout: 240_000 }, () => {
  let app: FastifyInstance;
  let available: Map<string, { available: boolean; reason?: string }>;
  before(async () => {
    app = await buildTestServer({
      overrides: { diagrams: { prestart: false, workers: 1, timeoutMs: 30_000, ...browser } },
    });
    const h = await app.inject({ url: '/plantuml/health' });
    assert.equal(h.statusCode, 200);
    available = new Map(
      (
        JSON.parse(h.body) as { languages: { type: string; available: boolean; reason?: string }[] }
      ).languages.map((l) => [l.type, l]),
    );
  });
  after(async () => {
    await app?.close();
  });

  const post = (url: string, payload: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'text/plain', ...headers } });

  for (const lang of LANGUAGES) {
    describe(lang.type, () => {
      const skip = () => {
        const a = available.get(lang.type);
        if (a?.available) return false;
        // JVM languages and optional system programs are required in CI (tools.ts); npm engines always.
        if (lang.kind === 'thread' && lang.engine !== 'bpmn')
          assert.fail(`${lang.type} unavailable: ${a?.reason}`);
        return missing(`${lang.type}: ${a?.reason}`);
      };

      const f = lang.formats[0]!;
      const svg = f === 'svg';
      const mime = svg ? 'image/svg+xml' : 'image/png';
      const shows = (body: string, raw: Buffer) =>
        svg ? body.includes(lang.label) : raw.subarray(0, 4).equals(PNG);
      it(`renders ${f}${svg ? ' with the source labels' : ''} through GET, POST and JSON POST alike`, async (t) => {
        if (skip()) return t.skip(available.get(lang.type)?.reason);
        const get = await app.inject({ url: `/plantuml/${lang.type}/${f}/${kroki(lang.sample)}` });
        assert.equal(get.statusCode, 200, get.body.slice(0, 300));
        assert.equal(get.headers['content-type'], mime);
        if (svg) assert.match(get.body, /<svg[\s>]/);
        // An embedded diagram calls nobody: no font import, image or link to outside the SVG.
        if (svg) assert.deepEqual(externalReferences(get.body), [], 'references outside the SVG');
        assert.ok(shows(get.body, get.rawPayload), `the answer shows ${lang.label}`);
        if (svg) assert.match(String(get.headers['content-security-policy']), /default-src 'none'/);
        assert.equal(get.headers['cache-control'], 'public, max-age=432000');
        const bytype = await post(`/plantuml/${lang.type}/${f}`, lang.sample);
        assert.equal(bytype.statusCode, 200);
        assert.deepEqual(bytype.rawPayload, get.rawPayload);
        const accept = await post(`/plantuml/${lang.type}`, lang.sample, { accept: mime });
        assert.equal(accept.statusCode, 200);
        assert.equal(accept.headers['content-type'], mime);
        const json = await app.inject({
          method: 'POST',
          url: '/plantuml/',
          payload: { diagram_source: lang.sample, diagram_type: lang.type, output_format: f },
        });
        assert.equal(json.statusCode, 200);
        assert.ok(shows(json.body, json.rawPayload));
        const typed = await post(
          `/plantuml/${lang.type}/${f}`,
          JSON.stringify({ diagram_source: lang.sample }),
          { 'content-type': 'application/json' },
        );
        assert.equal(typed.statusCode, 200);
        assert.ok(shows(typed.body, typed.rawPayload));
      });

      if (svg && lang.formats.includes('png'))
        it('renders PNG', async (t) => {
          if (skip()) return t.skip(available.get(lang.type)?.reason);
          const r = await app.inject({ url: `/plantuml/${lang.type}/png/${kroki(lang.sample)}` });
          assert.equal(r.statusCode, 200, r.body.slice(0, 300));
          assert.equal(r.headers['content-type'], 'image/png');
          assert.deepEqual(r.rawPayload.subarray(0, 4), PNG);
        });

      it('answers a conditional GET with 304 and an unknown format with 400 listing the formats', async (t) => {
        if (skip()) return t.skip(available.get(lang.type)?.reason);
        const url = `/plantuml/${lang.type}/${f}/${kroki(lang.sample)}`;
        const first = await app.inject({ url });
        const etag = String(first.headers.etag);
        assert.ok(etag.startsWith('"'));
        const again = await app.inject({ url, headers: { 'if-none-match': etag } });
        assert.equal(again.statusCode, 304);
        // A list member, never a substring (RFC 9110 13.1.2, infra/http/conditional.ts).
        assert.equal((await app.inject({ url, headers: { 'if-none-match': `"x${etag}"` } })).statusCode, 200);
        assert.equal(
          (await app.inject({ url, headers: { 'if-none-match': `"a", W/${etag}` } })).statusCode,
          304,
        );
        assert.equal((await app.inject({ url, headers: { 'if-match': '"other"' } })).statusCode, 412);
        const bad = await app.inject({ url: `/plantuml/${lang.type}/gif/${kroki(lang.sample)}` });
        assert.equal(bad.statusCode, 400);
        assert.match(
          bad.body,
          new RegExp(`^Error 400: Unsupported output format: gif for ${lang.type}\\. Must be one of ${f}`),
        );
      });
    });
  }

  it('answers an unknown diagram type with 404 (GET) and 400 (JSON) listing the types', async () => {
    const get = await app.inject({ url: `/plantuml/nosuchtype/svg/${kroki('a')}` });
    assert.equal(get.statusCode, 404);
    assert.match(get.body, /diagram types: plantuml, c4plantuml, .*graphviz/);
    const json = await app.inject({
      method: 'POST',
      url: '/plantuml/',
      payload: { diagram_source: 'a', diagram_type: 'nosuchtype', output_format: 'svg' },
    });
    assert.equal(json.statusCode, 400);
    assert.match(json.body, /^Error 400: Unsupported diagram type: nosuchtype\. Must be one of plantuml, /);
  });

  it("answers a Graphviz syntax error with 400, the engine's message and line, in Kroki's shape per Accept", async () => {
    const src = 'digraph {\n  a -> b\n  b -> ;\n}';
    const text = await app.inject({ url: `/plantuml/graphviz/svg/${kroki(src)}` });
    assert.equal(text.statusCode, 400);
    assert.equal(text.headers['content-type'], 'text/plain; charset=utf-8');
    assert.match(text.body, /^Error 400: syntax error in line 3/);
    const json = await app.inject({
      url: `/plantuml/graphviz/svg/${kroki(src)}`,
      headers: { accept: 'application/json' },
    });
    assert.deepEqual(JSON.parse(json.body), {
      error: { code: 400, message: JSON.parse(json.body).error.message },
    });
    assert.match(JSON.parse(json.body).error.message, /line 3/);
    const img = await app.inject({
      url: `/plantuml/graphviz/svg/${kroki(src)}`,
      headers: { accept: 'image/avif,image/webp,image/svg+xml,image/*,*/*;q=0.8' },
    });
    assert.equal(img.statusCode, 400);
    assert.equal(img.headers['content-type'], 'image/svg+xml');
    assert.match(img.body, /line 3/);
    assertNoInternals(text.body, 'graphviz syntax error');
  });

  it('passes the layout option from the query, a Kroki-Diagram-Options header or diagram_options', async () => {
    const src = 'graph { a -- b -- c -- a }';
    const dot = await app.inject({ url: `/plantuml/graphviz/svg/${kroki(src)}` });
    const q = await app.inject({ url: `/plantuml/graphviz/svg/${kroki(src)}?layout=circo` });
    const h = await app.inject({
      url: `/plantuml/graphviz/svg/${kroki(src)}`,
      headers: { 'kroki-diagram-options-layout': 'circo' },
    });
    assert.equal(q.statusCode, 200);
    assert.notEqual(q.body, dot.body);
    assert.equal(h.body, q.body);
  });

  it('refuses an empty body and a source over the cap', async () => {
    const empty = await post('/plantuml/graphviz/svg', '');
    assert.equal(empty.statusCode, 400);
    const big = await post('/plantuml/graphviz/svg', `digraph { ${'a -> b\n'.repeat(60_000)} }`);
    assert.equal(big.statusCode, 413);
  });

  it('lists every language in /health with available or the reason', async () => {
    const h = await app.inject({ url: '/plantuml/health' });
    assert.match(String(h.headers['content-type']), /^application\/health\+json/);
    const body = JSON.parse(h.body) as {
      status: string;
      languages: { type: string; available: boolean; reason?: string }[];
    };
    for (const l of LANGUAGES) {
      const row = body.languages.find((x) => x.type === l.type);
      assert.ok(row, `${l.type} listed`);
      assert.ok(row.available || row.reason, `${l.type} says why it is unavailable`);
    }
  });
});
