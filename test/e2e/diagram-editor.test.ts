// Issue 24, acceptance 5 (second half): the home page's diagram editor in real headless Chromium, for
// every language of the registry. Each available language is picked, its sample's preview renders
// (the SVG the page shows carries the sample's label), and the copied Kroki link renders through the
// API; languages the server cannot render are offered disabled with /health's reason. The page's
// CSP stays strict (no inline script, no eval): a violation would be a console error.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { inflateSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { LANGUAGES } from '../../src/services/diagrams/kroki/languages.ts';
import { editorSample } from '../../src/services/diagrams/page.ts';
import { type Running, startTestServer } from '../helpers/server.ts';
import { missing, toolSkip } from '../helpers/tools.ts';
import { type Browser, collectErrors, launch } from './web-browser.ts';

interface HealthLanguage {
  type: string;
  available: boolean;
  reason?: string;
}

describe('diagram editor in Chromium', { skip: toolSkip('chromium'), timeout: 600_000 }, () => {
  let srv: Running;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let health: Map<string, HealthLanguage>;
  before(async () => {
    srv = await startTestServer({
      overrides: {
        // A cold JVM's first C4 include on a busy two-core machine can pass the 10 s default: this
        // test is about the editor, not the render timeout (diagram-bombs.test.ts is).
        // BPMN draws in the headless-browser pool, on with this Chromium (toolSkip above requires it).
        diagrams: {
          prestart: true,
          workers: 1,
          timeoutMs: 60_000,
          mermaidChromium: '/usr/bin/chromium',
          mermaidBrowsers: 1,
          mermaidBrowserPages: 1,
        },
        // No relay listener here: its section would report the status route's 503.
        relay: { enabled: false },
      },
    });
    const h = (await (await fetch(`${srv.url}/plantuml/health`)).json()) as { languages: HealthLanguage[] };
    health = new Map(h.languages.map((l) => [l.type, l]));
    browser = await launch();
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
    page = await browser.context.newPage();
    // Generous: a cold engine (the PlantUML JVM, D2's Go runtime) on a busy two-core machine.
    page.setDefaultTimeout(120_000);
    errors = collectErrors(page);
    page.on('response', (r) => {
      if (r.status() >= 500) errors.push(`answer ${r.status()}: ${r.url()}`);
    });
    const res = await page.goto(`${srv.url}/`, { waitUntil: 'domcontentloaded' });
    const csp = res?.headers()['content-security-policy'] ?? '';
    assert.match(
      csp,
      /script-src 'self'(;|$)/,
      'scripts only from the page origin: no inline script, no eval',
    );
    assert.doesNotMatch(csp, /unsafe-(inline|eval)/);
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
  });

  /** The preview of `type` in `format` is on screen and the status says so (or names an error). */
  async function shown(type: string, format: string): Promise<string> {
    const el = format === 'txt' ? '#uml-txt' : '#uml-img';
    await page.waitForFunction(
      ([sel, want]) => {
        const e = document.querySelector<HTMLElement>(sel!);
        const status = document.getElementById('uml-status')?.dataset['kind'];
        return (e?.dataset['shown'] === want && status === 'ok') || status === 'error';
      },
      [el, `${type}/${format}`],
    );
    return (await page.textContent('#uml-status')) ?? '';
  }

  it('offers every language of the registry, those that cannot render here disabled with the reason', async () => {
    await page.waitForFunction(() => document.getElementById('uml-unavailable-list') !== null);
    const offered = await page.$$eval('#uml-type option', (os) =>
      os.map((o) => ({ type: (o as HTMLOptionElement).value, disabled: (o as HTMLOptionElement).disabled })),
    );
    assert.deepEqual(
      offered.map((o) => o.type),
      LANGUAGES.map((l) => l.type),
    );
    const unavailable = LANGUAGES.filter((l) => !health.get(l.type)?.available).map((l) => l.type);
    // /health is read after the page loads: wait until the page has applied it.
    await page.waitForFunction(
      (n) => document.querySelectorAll('#uml-type option:disabled').length === n,
      unavailable.length,
    );
    const disabled = await page.$$eval('#uml-type option:disabled', (os) =>
      os.map((o) => (o as HTMLOptionElement).value),
    );
    assert.deepEqual(disabled, unavailable);
    const listed = (await page.textContent('#uml-unavailable-list')) ?? '';
    for (const t of unavailable) assert.ok(listed.includes(`${t}: ${health.get(t)?.reason}`), listed);
    // Kroki's languages that devutil does not render at all are listed too (diagramsnet, tikz...).
    assert.match(listed, /diagramsnet: /);
  });

  for (const lang of LANGUAGES) {
    it(`${lang.type}: previews the sample and copies a Kroki link that renders through the API`, async (t) => {
      const h = health.get(lang.type);
      // Every language is required in CI (.ci/run installs the optional programs).
      if (!h?.available) return t.skip(missing(`${lang.type} is not available here: ${h?.reason}`));
      // The preview's own request (the page shows its answer through a blob: URL).
      const previewPath = lang.kind === 'plantuml' ? '/plantuml/' : `/plantuml/${lang.type}/`;
      const answer = page.waitForResponse((r) => {
        const p = new URL(r.url()).pathname;
        return p.startsWith(`${previewPath}${lang.formats[0]}/`) && r.request().resourceType() === 'fetch';
      });
      await page.selectOption('#uml-type', lang.type);
      assert.equal(await page.inputValue('#uml-src'), editorSample(lang), 'the sample is in the editor');
      const format = await page.inputValue('#uml-fmt');
      assert.equal(format, lang.formats[0], "the language's first format is picked");
      const status = await shown(lang.type, format);
      assert.equal(status, 'Rendered.', `${lang.type}: ${status}`);
      // Chromium does not keep the body of a fetch read into a Blob for the test to see: the same
      // URL is asked again (the answer is deterministic, and now a cache hit).
      const asked = await answer;
      assert.equal(asked.status(), 200);
      assert.equal(asked.headers()['content-type'], format === 'svg' ? 'image/svg+xml' : 'image/png');
      const body = Buffer.from(await (await fetch(asked.url())).arrayBuffer());
      // The image decodes (a broken one completes with width 0; waitForFunction's timeout fails the test).
      await page.waitForFunction(() => {
        const img = document.getElementById('uml-img') as HTMLImageElement | null;
        return img?.complete === true && img.naturalWidth > 0 && img.src.startsWith('blob:');
      });
      if (format === 'svg') {
        assert.match(body.toString('utf8'), /<svg[\s>]/);
        assert.ok(body.toString('utf8').includes(lang.label), `the preview shows "${lang.label}"`);
      } else assert.deepEqual([...body.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG preview');

      // The PlantUML server link is offered for PlantUML's languages only.
      const pumlShown = await page.isVisible('#uml-url');
      assert.equal(pumlShown, lang.kind === 'plantuml');

      await page.click('button[data-copy-from="uml-kroki"]');
      const link = await page.evaluate(() => navigator.clipboard.readText());
      assert.equal(link, await page.inputValue('#uml-kroki'));
      const prefix = `${srv.url}/plantuml/${lang.type}/${format}/`;
      assert.ok(link.startsWith(prefix), link);
      const src = inflateSync(Buffer.from(link.slice(prefix.length), 'base64url')).toString('utf8');
      assert.equal(src, editorSample(lang), "the link is Kroki's encoding of the editor's text");
      const r = await fetch(link);
      const got = Buffer.from(await r.arrayBuffer());
      assert.equal(r.status, 200, got.toString('utf8', 0, 300));
      if (format === 'svg') assert.ok(got.toString('utf8').includes(lang.label));
      else assert.deepEqual([...got.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
      if (pumlShown) {
        const p = await fetch(await page.inputValue('#uml-url'));
        assert.equal(p.status, 200, 'the PlantUML server link renders too');
      }
    });
  }

  it('switches the preview and the Kroki link to PNG where the language offers it', async (t) => {
    if (!health.get('graphviz')?.available) return t.skip(missing('graphviz is not available here'));
    await page.selectOption('#uml-type', 'graphviz');
    await shown('graphviz', 'svg');
    const formats = await page.$$eval('#uml-fmt option', (os) => os.map((o) => o.textContent));
    assert.deepEqual(formats, ['svg', 'png', 'jpeg']);
    const answer = page.waitForResponse((r) =>
      new URL(r.url()).pathname.startsWith('/plantuml/graphviz/png/'),
    );
    await page.selectOption('#uml-fmt', 'png');
    assert.equal(await shown('graphviz', 'png'), 'Rendered.');
    const asked = await answer;
    assert.equal(asked.headers()['content-type'], 'image/png');
    // The page's CSP keeps its own script from reading the blob: the same URL is asked again here.
    const png = Buffer.from(await (await fetch(asked.url())).arrayBuffer());
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'the preview holds a PNG');
    assert.match(await page.inputValue('#uml-kroki'), /\/plantuml\/graphviz\/png\//);
    // A language without PNG falls back to its first format; back on one with PNG, PNG is kept.
    await page.selectOption('#uml-type', 'd2');
    assert.deepEqual(await page.$$eval('#uml-fmt option', (os) => os.map((o) => o.textContent)), ['svg']);
    await page.selectOption('#uml-type', 'graphviz');
    assert.equal(await page.inputValue('#uml-fmt'), 'png');
    await page.selectOption('#uml-fmt', 'svg');
    await shown('graphviz', 'svg');
  });

  it("names the engine's message and line of a syntax error, and keeps what was typed per language", async (t) => {
    if (!health.get('graphviz')?.available) return t.skip(missing('graphviz is not available here'));
    await page.selectOption('#uml-type', 'graphviz');
    await page.fill('#uml-src', 'digraph {\n  a -> b\n  c -> ;\n}');
    await page.waitForFunction(() => document.getElementById('uml-status')?.dataset['kind'] === 'error');
    assert.match((await page.textContent('#uml-status')) ?? '', /syntax error.*line.*3/i);
    const stale = await page.$eval('#uml-img', (i) => i.closest('figure')?.classList.contains('stale'));
    assert.equal(stale, true, 'the last good preview is dimmed');
    await page.selectOption('#uml-type', 'dot');
    await page.selectOption('#uml-type', 'graphviz');
    assert.equal(await page.inputValue('#uml-src'), 'digraph {\n  a -> b\n  c -> ;\n}');
  });

  it('previews a source too long for a URL by POSTing it, and still offers the Kroki link', async (t) => {
    if (!health.get('graphviz')?.available) return t.skip(missing('graphviz is not available here'));
    await page.selectOption('#uml-type', 'graphviz');
    // Random text does not compress: its encoding is far past what a request line may carry.
    const text = `/* ${randomBytes(9000).toString('base64')} */\ndigraph { long -> source }`;
    const answer = page.waitForResponse((r) => new URL(r.url()).pathname === '/plantuml/graphviz/svg');
    await page.fill('#uml-src', text);
    const asked = await answer;
    assert.equal(asked.request().method(), 'POST');
    assert.equal(asked.request().postData(), text);
    assert.equal(asked.status(), 200);
    assert.equal(await shown('graphviz', 'svg'), 'Rendered.');
    const link = await page.inputValue('#uml-kroki');
    assert.ok(link.length > 9000, 'the link carries the whole source');
    const prefix = `${srv.url}/plantuml/graphviz/svg/`;
    assert.equal(inflateSync(Buffer.from(link.slice(prefix.length), 'base64url')).toString('utf8'), text);
  });

  it('ran without console errors or CSP violations', () => {
    // The syntax errors above are the expected 400s.
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
  });
});
