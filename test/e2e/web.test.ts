// The home page in real headless Chromium against the real server: every section renders without
// console errors, and the tools work in place (upload, proxy converter, avatar, diagram editor).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { decode64 } from '../../src/services/diagrams/text-encoder.ts';
import { relayBackground } from '../../src/services/relay/background.ts';
import { photo } from '../fixtures/image/images.ts';
import { freePort } from '../helpers/ports.ts';
import {
  buildTestServer,
  type Overrides,
  type Running,
  startTestServer,
  tempDir,
} from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';
import { cuttingRelay, sample } from '../helpers/tus.ts';
import { type Browser, CONTRAST_JS, collectErrors, launch } from './web-browser.ts';

const OUT = join(import.meta.dirname, '..', '..', 'test-output');
const SECTIONS = ['files', 'ip', 'image', 'telegram', 'proxy', 'diagrams', 'avatar', 'relay', 'setup'];
/** The single-stack test's host names, resolved by Chromium itself to 127.0.0.1 and ::1 only. */
const SINGLE_STACK_HOSTS = '--host-resolver-rules=MAP v4.devutil.test 127.0.0.1, MAP v6.devutil.test [::1]';
const BOT_KEY = '123456:AAE-WEB-e2e-secret-key-0123456789';

/** A minimal Telegram Bot API stand-in: records sendMessage calls and answers like Telegram. */
function fakeTelegram(): Promise<{ server: Server; url: string; calls: Record<string, unknown>[] }> {
  const calls: Record<string, unknown>[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const params = JSON.parse(body || '{}') as Record<string, unknown>;
      calls.push({ path: req.url, ...params });
      const ok = req.url === `/bot${BOT_KEY}/sendMessage`;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          ok
            ? {
                ok: true,
                result: {
                  message_id: 7,
                  from: { id: 123456, is_bot: true, first_name: 'Web', username: 'web_bot' },
                  chat: { id: Number(params['chat_id']), type: 'private', first_name: 'Ada' },
                  date: 1_700_000_000,
                  text: params['text'],
                },
              }
            : { ok: false, error_code: 401, description: 'Unauthorized' },
        ),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls }),
    ),
  );
}

describe('home page in Chromium', { skip: toolSkip('chromium') }, () => {
  let srv: Running;
  let browser: Browser;
  let telegram: Awaited<ReturnType<typeof fakeTelegram>>;
  let relay: { close(): Promise<void> } | null = null;
  before(async () => {
    telegram = await fakeTelegram();
    const overrides: Overrides = {
      // Outbound requests reach loopback only through an egress override, as in production.
      egress: { resolve: [`api.telegram.test=${new URL(telegram.url).host}`] },
      telegram: { apiBase: 'http://api.telegram.test' },
      relay: { port: await freePort(), statusPort: 0, host: '127.0.0.1' },
      // The page's diagram previews are rendered for real; on a machine busy with other suites a
      // first render can pass the default 10 s deadline (a 504 the console would report).
      diagrams: { timeoutMs: 90_000 },
      // Chromium beside other suites can be slow to send a form's small body (a 408 at load 22).
      server: { bodyTimeoutMs: 90_000 },
    };
    // No outside internet in tests: the avatar service must not wait for the real Gravatar.
    overrides.avatar = { upstream: 'none' } as Overrides['avatar'];
    // Files over 4 MiB go through tus (the 3 MiB upload below stays a multipart POST).
    overrides.files = { resumableOverBytes: 4 * 1024 * 1024 } as Overrides['files'];
    // An image directory with two categories (subfolders) for the image tool's selector.
    const images = tempDir('devutil-web-images-');
    mkdirSync(join(images, 'cats'));
    mkdirSync(join(images, 'dogs'));
    writeFileSync(join(images, 'cats', 'tabby.jpg'), await photo(800, 600, [230, 30, 30]));
    writeFileSync(join(images, 'dogs', 'rex.jpg'), await photo(800, 600, [30, 30, 230]));
    overrides.image = { dir: images } as Overrides['image'];
    srv = await startTestServer({ overrides });
    // The directory is scanned in the background: the page lists what the catalogue has.
    for (let i = 0; i < 100; i++) {
      const list = (await (await fetch(`${srv.url}/rest/api/v1/image/list?limit=1`)).json()) as {
        data: { categories: unknown[] };
      };
      if (list.data.categories.length === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    relay = await relayBackground.start(srv.app.ctx);
    // One browser for every page with JavaScript, the single-stack test's too: its two host names
    // (resolved by Chromium itself) reach nothing in the other tests.
    browser = await launch({ args: [SINGLE_STACK_HOSTS] });
  });
  after(async () => {
    await browser?.close();
    await relay?.close();
    await srv?.close();
    telegram?.server.close();
  });

  async function open(): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    // Generous: CI runs this beside every other suite on two cores, and the first diagram
    // preview waits for a cold PlantUML JVM.
    page.setDefaultTimeout(60_000);
    const errors = collectErrors(page);
    await page.goto(`${srv.url}/`, { waitUntil: 'domcontentloaded' });
    await page.waitForLoadState('networkidle');
    return { page, errors };
  }

  // The first three cases only look at the page as loaded (the keyboard case, which moves the focus
  // and the URL, goes last): one page load for the three.
  let shared: Promise<{ page: Page; errors: string[] }> | undefined;
  const home = () => (shared ??= open());

  it('renders every section without console errors, in light and dark, and saves screenshots', async () => {
    const { page, errors } = await home();
    for (const id of SECTIONS) {
      assert.equal(await page.locator(`section#${id} h2`).isVisible(), true, `section ${id}`);
    }
    assert.equal(await page.locator('a[href="/docs"]').first().isVisible(), true);
    // The script ran: copy buttons are revealed and the JS-only buttons enabled.
    assert.equal(await page.locator('html.js').count(), 1);
    assert.equal(await page.locator('#ip-refresh').isEnabled(), true);
    const w = await page.locator('#image-preview').evaluate((i) => (i as HTMLImageElement).naturalWidth);
    assert.equal(w, 640, 'the random image preview loaded');
    mkdirSync(OUT, { recursive: true });
    await page.screenshot({ path: join(OUT, 'web-home.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.notEqual(bg, 'rgb(245, 247, 251)', 'dark mode changes the background');
    await page.screenshot({ path: join(OUT, 'web-home-dark.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
    assert.equal(overflow, false, 'no horizontal scrolling on a phone-sized screen');
    await page.screenshot({ path: join(OUT, 'web-home-mobile.png') });
    assert.deepEqual(errors, []);
    // Back to the page as loaded, for the cases that share it.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('keeps text contrast at WCAG AA (4.5:1, 3:1 for large text) in light and dark', async () => {
    const { page } = await home();
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const failures = (await page.evaluate(CONTRAST_JS)) as string[];
      assert.deepEqual(failures, [], `${scheme} theme`);
    }
  });

  it('gives every form control an accessible name and starts keyboard users at a skip link', async () => {
    const { page } = await home();
    await page.setViewportSize({ width: 1280, height: 900 });
    const unlabeled = await page.evaluate(() =>
      Array.from(document.querySelectorAll('input, select, textarea'))
        .filter((el) => {
          const e = el as HTMLInputElement;
          return !(e.labels?.length || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby'));
        })
        .map((el) => el.id || el.outerHTML.slice(0, 60)),
    );
    assert.deepEqual(unlabeled, []);
    // Keyboard: the first Tab lands on the skip link, which jumps to the utilities.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'skip');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => location.hash === '#main');
    await page.close();
    shared = undefined;
  });

  it('is readable without JavaScript: sections, examples and the caller address are in the HTML', async () => {
    // Script turned off for this page alone, in the browser the other cases use: what Playwright's
    // javaScriptEnabled: false sends for each page (Emulation.setScriptExecutionDisabled), without
    // a second Chromium.
    const page = await browser.context.newPage();
    try {
      const cdp = await browser.context.newCDPSession(page);
      await cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
      await page.goto(`${srv.url}/`, { waitUntil: 'domcontentloaded' });
      for (const id of SECTIONS) assert.equal(await page.locator(`section#${id} .lead`).isVisible(), true);
      assert.equal(await page.locator('#ip-value').textContent(), '127.0.0.1');
      assert.match((await page.locator('#ip pre').first().textContent()) ?? '', /rest\/api\/v1\/ip/);
      assert.equal(await page.locator('html.js').count(), 0, 'no script of the page ran');
    } finally {
      await page.close();
    }
  });

  it('converts a GitHub URL, an apt line and a PyPI URL to proxied URLs with snippets', async () => {
    const { page, errors } = await open();
    const input = page.locator('#proxy-in');
    await input.fill('https://github.com/nodejs/node');
    await page.waitForFunction(() => (document.getElementById('proxy-out') as HTMLInputElement).value !== '');
    assert.equal(await page.inputValue('#proxy-out'), `${srv.url}/proxy/github.com/nodejs/node`);
    assert.equal(
      await page.textContent('#proxy-snippet'),
      `git clone ${srv.url}/proxy/github.com/nodejs/node.git`,
    );
    await input.fill('deb http://deb.debian.org/debian bookworm main');
    await page.waitForFunction(() =>
      document.getElementById('proxy-snippet')?.textContent?.startsWith('deb '),
    );
    assert.equal(
      await page.textContent('#proxy-snippet'),
      `deb ${srv.url}/proxy/deb.debian.org/debian bookworm main`,
    );
    await input.fill('https://pypi.org/simple/requests/');
    await page.waitForFunction(() =>
      document.getElementById('proxy-snippet')?.textContent?.startsWith('pip'),
    );
    assert.equal(
      await page.textContent('#proxy-snippet'),
      `pip install --index-url ${srv.url}/proxy/pypi.org/simple requests`,
    );
    await input.fill('https://evil.example.com/x');
    await page.waitForFunction(() =>
      document.getElementById('proxy-status')?.textContent?.includes('allow-list'),
    );
    assert.equal(await page.inputValue('#proxy-out'), '');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows the avatar preview for an email by its MD5 hash, as other sites build it, sending only hashes', async () => {
    const { page, errors } = await open();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const email = 'Ada.Lovelace@Example.org';
    // Gravatar's recipe: the trimmed, lower-cased address, MD5 (WordPress, GitLab, Gitea send this).
    const hash = createHash('md5').update(email.trim().toLowerCase()).digest('hex');
    const sha = createHash('sha256').update(email.trim().toLowerCase()).digest('hex');
    await page.fill('#avatar-email', `  ${email} `);
    await page.waitForFunction(
      (h) => (document.getElementById('avatar-url') as HTMLInputElement).value.includes(h),
      hash,
    );
    // SHA-256 is accepted too: shown beside it (crypto.subtle exists on http://127.0.0.1).
    assert.match(
      (await page.textContent('#avatar-status')) ?? '',
      new RegExp(`MD5.*${hash}.*SHA-256.*${sha}`),
    );
    const img = page.locator('#avatar-previews img').nth(1);
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll<HTMLImageElement>('#avatar-previews img')).every(
        (i) => i.complete && i.naturalWidth > 0,
      ),
    );
    assert.match((await img.getAttribute('src')) ?? '', new RegExp(`^/avatar/${hash}\\?s=160&d=identicon`));
    assert.equal(await img.evaluate((i) => (i as HTMLImageElement).naturalWidth), 160);
    assert.equal(await page.inputValue('#avatar-url'), `${srv.url}/avatar/${hash}?s=80&d=identicon`);
    for (const u of requested) assert.doesNotMatch(decodeURIComponent(u).toLowerCase(), /lovelace/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('uploads a file through the page with a progress bar, then shows the result and token', async () => {
    const { page, errors } = await open();
    const content = Buffer.alloc(3 * 1024 * 1024, 'devutil web upload test line\n');
    await page.setInputFiles('#upload-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: content });
    assert.equal(await page.inputValue('#upload-key'), 'notes.txt');
    await page.fill('#upload-key', 'web-e2e-notes.txt');
    // Throttle uploads (Chromium's network emulation) so the bar must pass through partial values.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 2 * 1024 * 1024,
    });
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      const pct = document.getElementById('upload-pct')!;
      new MutationObserver(() => seen.push(pct.textContent ?? '')).observe(pct, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    await page.click('#upload-go');
    await page.locator('#upload-result').waitFor({ state: 'visible' });
    assert.equal(
      await page.locator('#upload-progress').evaluate((p) => (p as HTMLProgressElement).value),
      100,
    );
    assert.equal(await page.textContent('#upload-pct'), '100%');
    const events = Number(await page.locator('#upload-progress').getAttribute('data-events'));
    assert.ok(events >= 2, `upload progress events reached the bar (${events})`);
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    assert.ok(
      seen.some((p) => /^([1-9]|[1-9]\d)%$/.test(p)),
      `the bar showed a partial value on the way: ${seen.join(' ')}`,
    );
    await cdp.detach();
    const json = JSON.parse((await page.textContent('#upload-json')) ?? '{}');
    assert.equal(json.success, true);
    assert.equal(json.data.key, 'web-e2e-notes.txt');
    assert.equal(json.data.file_info.filename, 'notes.txt');
    assert.equal(json.data.file_info.size, content.length);
    assert.ok((await page.inputValue('#upload-owner')).length >= 16, 'owner token shown');
    assert.equal(await page.inputValue('#upload-link'), `${srv.url}/api/file/web-e2e-notes.txt`);
    const owner = await page.inputValue('#upload-owner');
    assert.match(
      (await page.textContent('#upload-cmds')) ?? '',
      new RegExp(`curl -f -X DELETE -H 'X-Owner-Token: ${owner}' ${srv.url}/api/file/web-e2e-notes\\.txt`),
    );
    const back = await fetch(`${srv.url}/api/file/web-e2e-notes.txt`);
    assert.deepEqual(Buffer.from(await back.arrayBuffer()), content);
    // The shown download command, run where the uploaded notes.txt is: it saves a copy under the
    // original name beside it and leaves the user's file alone (curl -OJ alone would meet it).
    const download = ((await page.textContent('#upload-cmds')) ?? '').split('\n')[0] ?? '';
    const dir = tempDir('devutil-web-dl-');
    writeFileSync(join(dir, 'notes.txt'), content);
    utimesSync(join(dir, 'notes.txt'), new Date(2001, 0, 1), new Date(2001, 0, 1));
    await promisify(execFile)('bash', ['-c', download], { cwd: dir });
    assert.deepEqual(readFileSync(join(dir, 'downloads', 'notes.txt')), content, download);
    assert.equal(
      statSync(join(dir, 'notes.txt')).mtime.getFullYear(),
      2001,
      'the uploaded file is untouched',
    );
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows a QR code of the download link that zbarimg decodes, and the ShareX and script downloads', {
    skip: toolSkip('zbarimg', ['--version']),
  }, async () => {
    const { page, errors } = await open();
    await page.setInputFiles('#upload-file', {
      name: 'qr.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('qr\n'),
    });
    await page.fill('#upload-key', 'web-e2e-qr.txt');
    await page.click('#upload-go');
    await page.locator('#upload-result').waitFor({ state: 'visible' });
    const qr = page.locator('#upload-qr');
    await qr.waitFor({ state: 'visible' });
    await page.waitForFunction(
      () => (document.getElementById('upload-qr') as HTMLImageElement).naturalWidth > 0,
    );
    const png = join(OUT, 'web-upload-qr.png');
    mkdirSync(OUT, { recursive: true });
    await qr.screenshot({ path: png });
    const { stdout } = await promisify(execFile)('zbarimg', ['--raw', '-q', png]);
    assert.equal(stdout.trim(), `${srv.url}/api/file/web-e2e-qr.txt`);
    for (const href of ['/devutil.sxcu', '/upload.sh']) {
      const a = page.locator(`a[href="${href}"]`);
      assert.equal(await a.count(), 1, href);
      assert.equal((await fetch(`${srv.url}${href}`)).status, 200, href);
    }
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('sends a large file with tus and resumes it after the connection drops mid-upload', async () => {
    // The page is served through a relay that cuts the first connection carrying 2 MB of request.
    const relay = await cuttingRelay(srv.port, 2_000_000, 1);
    const page = await browser.context.newPage();
    page.setDefaultTimeout(60_000);
    const errors = collectErrors(page);
    await page.goto(`${relay.url}/`, { waitUntil: 'domcontentloaded' });
    await page.waitForLoadState('networkidle');
    const content = sample(6 * 1024 * 1024);
    await page.setInputFiles('#upload-file', {
      name: 'big.bin',
      mimeType: 'application/octet-stream',
      buffer: content,
    });
    await page.fill('#upload-key', 'web-e2e-resumable.bin');
    const patches: number[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH') patches.push(Number(r.headers()['upload-offset']));
    });
    await page.click('#upload-go');
    await page.locator('#upload-result').waitFor({ state: 'visible' });
    // The bytes that arrived before the cut were kept: the page went on from there, not from 0.
    assert.equal(patches[0], 0);
    assert.ok(
      patches.some((o) => o > 0 && o < content.length),
      `resumed mid-file: PATCH offsets ${patches.join(', ')}`,
    );
    const json = JSON.parse((await page.textContent('#upload-json')) ?? '{}');
    assert.equal(json.data.key, 'web-e2e-resumable.bin');
    assert.equal(json.data.file_info.size, content.length);
    assert.ok((await page.inputValue('#upload-owner')).length >= 16, 'owner token shown');
    const back = await fetch(`${srv.url}/api/file/web-e2e-resumable.bin`);
    assert.deepEqual(Buffer.from(await back.arrayBuffer()), content);
    // A finished upload leaves nothing to resume.
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    // Chromium reports the cut request itself as a console error; nothing else may appear.
    assert.deepEqual(
      errors.filter((e) => !/ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|net::|Failed to load resource/.test(e)),
      [],
    );
    await page.close();
    await relay.close();
  });

  it('updates the diagram preview after typing, with an encoded URL that decodes to the text', async () => {
    const { page, errors } = await open();
    const text = '@startuml\nactor User\nUser -> Web : types\nWeb --> User : preview\n@enduml';
    const before = await page.locator('#uml-img').evaluate((i) => (i as HTMLImageElement).naturalHeight);
    const rendered = Number((await page.locator('#uml-img').getAttribute('data-rendered')) ?? '0');
    await page.fill('#uml-src', text);
    await page.waitForFunction(
      (n) => Number(document.getElementById('uml-img')?.dataset['rendered'] ?? '0') > n,
      rendered,
      { timeout: 60_000 },
    );
    const url = await page.inputValue('#uml-url');
    assert.ok(url.startsWith(`${srv.url}/plantuml/svg/`), url);
    const enc = url.slice(url.lastIndexOf('/') + 1);
    assert.equal(inflateRawSync(decode64(enc) ?? new Uint8Array()).toString('utf8'), text);
    const after = await page.locator('#uml-img').evaluate((i) => (i as HTMLImageElement).naturalHeight);
    assert.notEqual(after, before, 'the preview shows the new diagram');
    // A syntax error shows the error image and the server's error header with its line.
    await page.fill('#uml-src', '@startuml\nAlice -> Bob : hi\nthis is not valid ((\n@enduml');
    await page.waitForFunction(() => document.getElementById('uml-status')?.dataset['kind'] === 'error');
    // The error is on the editor's third line, which is also what the engine's error image says.
    assert.match((await page.textContent('#uml-status')) ?? '', /error.*\(line 3\)$/i);
    const bad = await page.inputValue('#uml-url');
    const engineText = await (
      await fetch(`${srv.url}/plantuml/txt/${bad.slice(bad.lastIndexOf('/') + 1)}`)
    ).text();
    assert.match(engineText, /\(line 3\)/, "the engine's own error text names the same line");
    await page.fill('#uml-src', text);
    await page.waitForFunction(() => document.getElementById('uml-status')?.dataset['kind'] === 'ok');
    await page.selectOption('#uml-fmt', 'txt');
    await page.locator('#uml-txt').waitFor({ state: 'visible' });
    await page.waitForFunction(() =>
      (document.getElementById('uml-txt')?.textContent ?? '').includes('User'),
    );
    // The syntax error above is the one expected 400.
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
    await page.close();
  });
  it('updates the random image preview and its URL from the controls, and refreshes the IP', async () => {
    const { page, errors } = await open();
    await page.click('#ip-refresh');
    await page.waitForFunction(() => document.getElementById('ip-status')?.dataset['kind'] === 'ok');
    assert.equal(await page.textContent('#ip-value'), '127.0.0.1');
    assert.equal(await page.textContent('#ip-scope'), 'loopback (this machine)');
    assert.equal(await page.textContent('#ip-country'), '–');
    // No single-stack host names configured: no IPv4/IPv6 lines.
    assert.equal(await page.locator('#ip-v4, #ip-v6').count(), 0);
    await page.fill('#image-width', '300');
    await page.fill('#image-height', '200');
    await page.fill('#image-id', 'web-e2e');
    await page.check('#image-gray');
    await page.waitForFunction(() => {
      const img = document.getElementById('image-preview') as HTMLImageElement;
      return img.complete && img.naturalWidth === 300 && img.src.includes('grayscale=1');
    });
    assert.equal(
      await page.locator('#image-preview').evaluate((i) => (i as HTMLImageElement).naturalHeight),
      200,
    );
    assert.equal(
      await page.inputValue('#image-url'),
      `${srv.url}/rest/api/v1/image?width=300&height=200&id=web-e2e&grayscale=1`,
    );
    // The category selector lists the image directory's subfolders and narrows the preview to one.
    await page.waitForFunction(
      () => (document.getElementById('image-category') as HTMLSelectElement | null)?.options.length === 3,
    );
    assert.deepEqual(
      await page
        .locator('#image-category option')
        .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)),
      ['', 'cats', 'dogs'],
    );
    await page.selectOption('#image-category', 'dogs');
    await page.waitForFunction(() => {
      const img = document.getElementById('image-preview') as HTMLImageElement;
      return img.complete && img.naturalWidth === 300 && img.src.includes('category=dogs');
    });
    assert.equal(
      await page.inputValue('#image-url'),
      `${srv.url}/rest/api/v1/image?width=300&height=200&id=web-e2e&category=dogs&grayscale=1`,
    );
    await page.selectOption('#image-category', '');
    await page.fill('#image-width', '0');
    await page.waitForFunction(() => document.getElementById('image-status')?.dataset['kind'] === 'error');
    assert.match((await page.textContent('#image-status')) ?? '', /width/i);
    // The refused preview is the expected 400 here.
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
    await page.close();
  });

  it('shows the caller details and both addresses read from the single-stack host names', async () => {
    // One dual-stack listener stands in for three host names: the page at localhost, an IPv4-only
    // name and an IPv6-only name (two other origins: CORS and CSP at work), SINGLE_STACK_HOSTS.
    const port = await freePort();
    const app = await buildTestServer({
      overrides: {
        server: { port, publicUrl: `http://localhost:${port}`, trustProxy: ['loopback'] },
        ip: { v4Url: `http://v4.devutil.test:${port}`, v6Url: `http://v6.devutil.test:${port}` },
        // No relay listener in this test: its section would report the status route's 503.
        relay: { enabled: false },
        avatar: { upstream: 'none' } as Overrides['avatar'],
        // No JVM of its own: the page's diagram preview is answered by the other server (below).
        diagrams: { prestart: false },
      },
    });
    await app.listen({ port, host: '::' });
    // The first details request reads the address databases (seconds on a busy machine, where the
    // page's own 10 s deadline could pass): read them now, so the page measures the page.
    const warm = await app.inject({
      url: '/rest/api/v1/ip?details=1',
      headers: { 'x-forwarded-for': '8.8.8.8' },
    });
    assert.equal(warm.statusCode, 200, warm.body);
    const page = await browser.context.newPage();
    try {
      page.setDefaultTimeout(60_000);
      const errors = collectErrors(page);
      // The page's own details request arrives as if through a proxy for a public caller, so the
      // packaged databases answer; the single-stack checks go out unchanged.
      await page.route(`http://localhost:${port}/rest/api/v1/ip?details=1`, (route) =>
        route.continue({ headers: { ...route.request().headers(), 'x-forwarded-for': '8.8.8.8' } }),
      );
      // The diagram section is not this test's subject: its requests go to the server the other
      // cases use, whose PlantUML JVM is warm, instead of starting a second JVM here.
      await page.route(`http://localhost:${port}/plantuml/**`, async (route) =>
        route.fulfill({
          response: await route.fetch({
            url: route.request().url().replace(`http://localhost:${port}`, srv.url),
          }),
        }),
      );
      await page.goto(`http://localhost:${port}/`, { waitUntil: 'domcontentloaded' });
      // Any outcome ends the wait; a failure then says what the page showed. The page gives each
      // check 8-30 s, which a machine running Chromium beside other suites can pass (seen in CI at
      // load 20: "signal timed out"): then the page's own Refresh button asks again, up to twice.
      const settled = () =>
        page.waitForFunction(() =>
          ['ip-status', 'ip-v4', 'ip-v6'].every((id) => document.getElementById(id)?.dataset['kind']),
        );
      await settled();
      for (let retry = 0; retry < 2; retry++) {
        const kinds = await page.evaluate(() =>
          ['ip-status', 'ip-v4', 'ip-v6'].map((id) => document.getElementById(id)?.dataset['kind']),
        );
        if (kinds.every((k) => k === 'ok')) break;
        await page.evaluate(() => {
          for (const id of ['ip-status', 'ip-v4', 'ip-v6'])
            delete document.getElementById(id)!.dataset['kind'];
        });
        // The attempt that ran out of time left its aborted requests in the console: the page is
        // judged by the attempt that follows.
        errors.length = 0;
        await page.click('#ip-refresh');
        await settled();
      }
      assert.equal(
        await page.locator('#ip-status').getAttribute('data-kind'),
        'ok',
        (await page.textContent('#ip-status')) ?? '',
      );
      assert.equal(await page.textContent('#ip-value'), '8.8.8.8');
      assert.equal(await page.locator('#ip-details').isVisible(), true);
      assert.equal(await page.textContent('#ip-scope'), 'public address');
      assert.match((await page.textContent('#ip-country')) ?? '', /\(US\)$|^US$/);
      assert.equal(await page.textContent('#ip-asn'), 'AS15169');
      assert.equal(await page.textContent('#ip-org'), 'Google LLC');
      await page.waitForFunction(() =>
        ['ip-v4', 'ip-v6'].every((id) => document.getElementById(id)?.dataset['kind']),
      );
      assert.equal(await page.textContent('#ip-v4'), '127.0.0.1');
      assert.equal(await page.textContent('#ip-v6'), '::1');
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await app.close();
    }
  });

  it('sends a message through the relay form and keeps the bot key out of URLs and storage', async () => {
    const { page, errors } = await open();
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    await page.fill('#tg-key', BOT_KEY);
    await page.fill('#tg-chat', '4242');
    await page.fill('#tg-text', 'Deploy done (100%)!');
    await page.click('#tg-send');
    await page.waitForFunction(() => document.getElementById('tg-status')?.dataset['kind'] === 'ok');
    const reply = JSON.parse((await page.textContent('#tg-json')) ?? '{}');
    assert.equal(reply.status, 1);
    assert.equal(reply.data.message_id, 7);
    const call = telegram.calls.at(-1);
    assert.equal(call?.['chat_id'], '4242');
    assert.equal(call?.['parse_mode'], 'MarkdownV2');
    assert.equal(call?.['text'], 'Deploy done \\(100%\\)\\!', 'escaped for MarkdownV2');
    for (const u of urls) assert.doesNotMatch(u, /WEB-e2e-secret-key/);
    const stored = await page.evaluate(
      () =>
        JSON.stringify({ ...localStorage }) +
        JSON.stringify({ ...sessionStorage }) +
        document.cookie +
        location.href,
    );
    assert.doesNotMatch(stored, /WEB-e2e-secret-key/);
    await page.fill('#tg-key', '999:AAE-wrong-key-0123456789abcdef');
    await page.click('#tg-send');
    await page.waitForFunction(() => document.getElementById('tg-status')?.dataset['kind'] === 'error');
    assert.match((await page.textContent('#tg-status')) ?? '', /401.*Unauthorized/);
    // The 401 is the expected answer here; only that one resource error may appear.
    assert.deepEqual(
      errors.filter((e) => !/status of 401/.test(e)),
      [],
    );
    await page.close();
  });

  it('keeps the owner token and download link after a 409, and deletes the file from there', async () => {
    const { page, errors } = await open();
    const key = 'web-e2e-409.txt';
    await page.setInputFiles('#upload-file', {
      name: 'a.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('first\n'),
    });
    await page.fill('#upload-key', key);
    await page.click('#upload-go');
    await page.waitForFunction(() => document.getElementById('upload-status')?.dataset['kind'] === 'ok');
    const owner = await page.inputValue('#upload-owner');
    assert.ok(owner.length >= 16);
    // The same key again, without the token: 409, and nothing shown before is lost.
    await page.setInputFiles('#upload-file', {
      name: 'b.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('second\n'),
    });
    await page.fill('#upload-key', key);
    await page.click('#upload-go');
    await page.waitForFunction(() => document.getElementById('upload-status')?.dataset['kind'] === 'error');
    assert.match((await page.textContent('#upload-status')) ?? '', /409/);
    assert.equal(await page.locator('#upload-result').isVisible(), true, 'the result stays');
    assert.equal(await page.inputValue('#upload-owner'), owner);
    assert.equal(await page.inputValue('#upload-link'), `${srv.url}/api/file/${key}`);
    assert.equal(await page.inputValue('#upload-token'), owner, 'the token field is filled in for this key');
    assert.equal(await page.locator('#upload-delete').isVisible(), true, 'delete is offered');
    assert.equal(await (await fetch(`${srv.url}/api/file/${key}`)).text(), 'first\n', 'nothing replaced');
    await page.click('#upload-delete');
    await page.waitForFunction(() => document.getElementById('upload-status')?.dataset['kind'] === 'ok');
    assert.match((await page.textContent('#upload-status')) ?? '', /Deleted/);
    assert.equal((await fetch(`${srv.url}/api/file/${key}`)).status, 404);
    // A key taken by someone else: the token field is empty, delete asks for the token.
    const other = new FormData();
    other.append('file', new Blob(['theirs\n']), 'theirs.txt');
    const theirs = await fetch(`${srv.url}/api/file/web-e2e-theirs.txt`, { method: 'POST', body: other });
    const theirToken = theirs.headers.get('x-owner-token') ?? '';
    await page.fill('#upload-token', '');
    await page.fill('#upload-key', 'web-e2e-theirs.txt');
    await page.click('#upload-go');
    await page.waitForFunction(() => /409/.test(document.getElementById('upload-status')?.textContent ?? ''));
    assert.equal(await page.inputValue('#upload-token'), '');
    await page.fill('#upload-token', theirToken);
    await page.click('#upload-delete');
    await page.waitForFunction(() =>
      /Deleted/.test(document.getElementById('upload-status')?.textContent ?? ''),
    );
    assert.equal((await fetch(`${srv.url}/api/file/web-e2e-theirs.txt`)).status, 404);
    // The refused uploads are the expected 409s.
    assert.deepEqual(
      errors.filter((e) => !/status of 409/.test(e)),
      [],
    );
    await page.close();
  });

  it('keeps every menu entry and "API docs" on screen and usable at 390 px', async () => {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ reducedMotion: 'reduce' }); // anchor jumps without smooth scrolling
    const errors = collectErrors(page);
    await page.goto(`${srv.url}/`, { waitUntil: 'networkidle' });
    const links = page.locator('header.top nav a, header.top a.docs');
    assert.equal(await links.count(), SECTIONS.length + 1);
    for (let i = 0; i < (await links.count()); i++) {
      const a = links.nth(i);
      const box = await a.boundingBox();
      const name = await a.textContent();
      assert.ok(box && (await a.isVisible()), `${name} is visible`);
      assert.ok(
        box.x >= 0 && box.x + box.width <= 390 && box.y >= 0 && box.y + box.height <= 844,
        `${name} on screen`,
      );
      // Nothing covers it: the element at its centre is the link itself.
      const hit = await page.evaluate(
        ([x, y]) => document.elementFromPoint(x as number, y as number)?.closest('a')?.textContent ?? '',
        [box.x + box.width / 2, box.y + box.height / 2],
      );
      assert.equal(hit, name, `${name} can be tapped`);
    }
    await page.screenshot({ path: join(OUT, 'web-home-390.png') });
    // A menu entry scrolls its section into view below the sticky header.
    await page.click('header.top nav a[href="#relay"]');
    await page.waitForFunction(() => location.hash === '#relay');
    const headerBottom = await page.evaluate(
      () => document.querySelector('header.top')?.getBoundingClientRect().bottom ?? 0,
    );
    const headingTop = await page.evaluate(
      () => document.getElementById('relay-h')?.getBoundingClientRect().top ?? -1,
    );
    assert.ok(
      headingTop >= headerBottom,
      `the heading (${headingTop}) is not under the header (${headerBottom})`,
    );
    assert.deepEqual(errors, []);
    const left = errors.length;
    await page.click('header.top a.docs');
    await page.waitForURL(`${srv.url}/docs`);
    // Leaving the home page cancels what it still had in flight (its live relay status, slow on a
    // busy machine: seen at load 40): the API requests of the page left behind, not the docs page's.
    const leaving = new RegExp(`^requestfailed: ${srv.url}/rest/api/v1/\\S+ net::ERR_ABORTED$`);
    assert.deepEqual(
      errors.slice(left).filter((e) => !leaving.test(e)),
      [],
    );
    await page.close();
  });

  it('shows the relay URI and live status', async () => {
    // Every section is tested, none skipped: a relay route gone missing fails here.
    const res = await fetch(`${srv.url}/rest/api/v1/relay`);
    assert.equal(res.status, 200, 'GET /rest/api/v1/relay');
    const api = (await res.json()) as { data: { uri: string } };
    const { page, errors } = await open();
    await page.waitForFunction(() => document.getElementById('relay-status')?.dataset['kind'] === 'ok');
    const uri = await page.inputValue('#relay-uri');
    assert.equal(uri, api.data.uri);
    assert.match(uri, /^relay:\/\/127\.0\.0\.1:\d+\/\?id=[A-Z0-9-]{63}/);
    // The example carries the real device ID, and the page says who can reach 127.0.0.1.
    assert.equal(await page.textContent('#relay-example'), `default, ${uri}`);
    assert.match(
      (await page.textContent('#relay-reach')) ?? '',
      /only this machine.*DEVUTIL_PUBLIC_URL.*DEVUTIL_RELAY_EXT_ADDRESS/,
    );
    assert.equal(await page.textContent('#relay-sessions'), '0');
    assert.match((await page.textContent('#relay-bytes')) ?? '', /^\d/);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
