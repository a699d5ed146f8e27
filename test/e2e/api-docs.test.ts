// The API reference: /openapi.json documents every route with a summary and its utility's tag, the
// file upload's multipart body is declared well enough to upload from the description alone, and
// /docs in real Chromium carries devutil's name, keeps its CSP without a console error, and
// uploads a file through "Try it out".
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TAGS } from '../../src/infra/http/openapi.ts';
import { type Overrides, type Running, startTestServer } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { type Browser, collectErrors, launch } from './web-browser.ts';

const OUT = join(import.meta.dirname, '..', '..', 'test-output');

type Operation = {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string; required?: boolean; schema?: { enum?: string[] } }[];
  description?: string;
  requestBody?: {
    required?: boolean;
    content: Record<
      string,
      { schema: { required?: string[]; properties: Record<string, Record<string, unknown>> } }
    >;
  };
};
type OpenApi = { servers: { url: string }[]; paths: Record<string, Record<string, Operation>> };

/** Routes that are not part of the API they would document, each for a stated reason. */
const NOT_DOCUMENTED: Record<string, string> = {
  '/openapi.json': 'the description itself',
  '/docs': 'its page',
  '/api/file/*': 'not a route of its own: a key with "/" in it answers 400 like any bad key',
  '/api/upload/': 'tus creation again (clients send either spelling): listed once, as /api/upload',
};

// A parameter's constraint (:topic(^tgr_.*$)) belongs to its name.
const shape = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z_]\w*(?:\([^/]*\))?|\*$/g, '{}');

describe('API reference', { timeout: 180_000 }, () => {
  let srv: Running;
  let doc: OpenApi;
  before(async () => {
    const overrides: Overrides = { relay: { enabled: false } };
    overrides.avatar = { upstream: 'none' } as Overrides['avatar'];
    srv = await startTestServer({ overrides });
    doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as OpenApi;
  });
  after(async () => {
    await srv?.close();
  });

  it('summarises and tags every route by its utility', () => {
    const tags = new Set(TAGS.map((t) => t.name));
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method.toUpperCase()} ${path}`;
        assert.ok(op.summary && op.summary.trim().length >= 5, `${where} has a summary`);
        assert.equal(op.tags?.length, 1, `${where} has one tag`);
        assert.ok(tags.has(op.tags?.[0] ?? ''), `${where}: tag ${op.tags?.[0]} is a utility`);
        for (const name of path.match(/\{[^}]+\}/g) ?? []) {
          const p = op.parameters?.find((x) => x.in === 'path' && `{${x.name}}` === name);
          assert.ok(p?.required, `${where} declares its path parameter ${name}`);
        }
        documented.add(`${method.toUpperCase()} ${shape(path)}`);
      }
    }
    const missing = srv.app
      .routeList()
      .filter((r) => {
        const path = r.slice(r.indexOf(' ') + 1);
        return !Object.keys(NOT_DOCUMENTED).some((x) => path === x || path.startsWith(`${x}/`));
      })
      .filter((r) => !documented.has(`${r.slice(0, r.indexOf(' '))} ${shape(r.slice(r.indexOf(' ') + 1))}`));
    assert.deepEqual(missing, []);
    // Spot checks that tags follow the registering utility.
    assert.deepEqual(doc.paths['/api/file/{key}']?.['post']?.tags, ['files']);
    assert.deepEqual(doc.paths['/proxy/{target}']?.['get']?.tags, ['proxy']);
    assert.deepEqual(doc.paths['/healthz']?.['get']?.tags, ['ops']);
  });

  it("names Kroki's diagram types and their formats on its one route per shape", () => {
    for (const [path, method] of [
      ['/plantuml/{type}/{fmt}/{encoded}', 'get'],
      ['/plantuml/{type}/{fmt}', 'post'],
      ['/plantuml/{type}', 'post'],
    ] as const) {
      const op = doc.paths[path]?.[method];
      const types = op?.parameters?.find((p) => p.in === 'path' && p.name === 'type')?.schema?.enum ?? [];
      for (const t of ['plantuml', 'graphviz', 'vegalite'])
        assert.ok(types.includes(t), `${method} ${path} lists the type ${t}`);
      assert.match(op?.description ?? '', /graphviz: svg png jpeg/, `${method} ${path} gives the formats`);
    }
  });

  it('uploads a file using nothing but the OpenAPI description of POST /api/file/{key}', async () => {
    const op = doc.paths['/api/file/{key}']?.['post'];
    const media = op?.requestBody?.content['multipart/form-data'];
    assert.ok(media, 'the upload declares a multipart/form-data body');
    assert.equal(op?.requestBody?.required, true);
    // Build the request from the description: every binary property is a file part.
    const form = new FormData();
    const content = `uploaded through the description ${Date.now()}\n`;
    for (const [name, prop] of Object.entries(media.schema.properties)) {
      if (prop['format'] === 'binary' || prop['contentMediaType'] !== undefined)
        form.append(name, new Blob([content], { type: 'text/plain' }), 'described.txt');
    }
    for (const name of media.schema.required ?? [])
      assert.ok(form.has(name), `required part ${name} is built`);
    const server = new URL(doc.servers[0]?.url ?? '/', `${srv.url}/openapi.json`);
    const path = '/api/file/{key}'.replace('{key}', 'via-openapi.txt');
    const r = await fetch(new URL(path.slice(1), server), { method: 'POST', body: form });
    assert.equal(r.status, 200, await r.clone().text());
    assert.ok(r.headers.get('x-owner-token'), 'a new key answers with its owner token');
    const back = await fetch(`${srv.url}/api/file/via-openapi.txt`);
    assert.equal(await back.text(), content);
    assert.match(back.headers.get('content-disposition') ?? '', /filename="described\.txt"/);
  });

  describe('in Chromium', { skip: toolSkip('chromium') }, () => {
    let browser: Browser;
    before(async () => {
      browser = await launch();
    });
    after(async () => {
      await browser?.close();
    });

    it("shows devutil's name, keeps its CSP without console errors and uploads through Try it out", async () => {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(30_000);
      const errors = collectErrors(page);
      const res = await page.goto(`${srv.url}/docs`, { waitUntil: 'networkidle' });
      const csp = res?.headers()['content-security-policy'] ?? '';
      assert.match(csp, /style-src 'self'(;|$)/, 'no unsafe-inline styles');
      assert.doesNotMatch(csp, /upgrade-insecure-requests/, 'plain-http self-hosting keeps working');
      assert.match(await page.title(), /devutil/);
      assert.equal(await page.locator('header.devutil-top a.devutil-brand').textContent(), 'devutil');
      assert.equal(await page.locator('header.devutil-top a.devutil-brand').getAttribute('href'), '/');
      assert.match((await page.locator('.info .title').textContent()) ?? '', /devutil/);
      assert.equal(await page.locator('text=Swagger').count(), 0, 'no Swagger or Fastify branding');
      mkdirSync(OUT, { recursive: true });
      await page.screenshot({ path: join(OUT, 'api-docs.png') });

      const op = page.locator('#operations-files-post_api_file__key_');
      await op.locator('.opblock-summary').click();
      await op.locator('button.try-out__btn').click();
      await op.locator('tr[data-param-name="key"] input').fill('from-docs.txt');
      const body = Buffer.from('hello from Try it out\n');
      await op
        .locator('input[type="file"]')
        .setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: body });
      await op.locator('button.execute').click();
      const status = op.locator('.live-responses-table tbody .response-col_status').first();
      await status.waitFor();
      assert.equal((await status.textContent())?.trim(), '200');
      const back = await fetch(`${srv.url}/api/file/from-docs.txt`);
      assert.deepEqual(Buffer.from(await back.arrayBuffer()), body);
      assert.match(back.headers.get('content-disposition') ?? '', /filename="hello\.txt"/);
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
});
