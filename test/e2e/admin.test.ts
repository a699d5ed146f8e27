// The admin dashboard in real headless Chromium against the real server: refused without the token
// (the page shows only the sign-in form, the JSON answers 401), and after real traffic (an upload,
// a download through the proxy from the fake GitHub, a diagram rendered by PlantUML on Java) it
// draws its charts and shows that traffic, in light and dark.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { testSecret } from '../helpers/secrets.ts';
import { toolSkip } from '../helpers/tools.ts';
import { type Browser, CONTRAST_JS, collectErrors, launch } from './web-browser.ts';

const OUT = join(import.meta.dirname, '..', '..', 'test-output');
const TOKEN = testSecret('admin-e2e-');
const ASSET = '/github.com/o/r/releases/download/v1/asset.bin';
const DIAGRAM = '/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000';

interface Row {
  key: string;
  requests: number;
  bytes?: number;
}
interface Allowance {
  name: string;
  used: number;
  limit: number;
}
interface Stats {
  caches: { name: string; hits: number; misses: number; hitRatio: number | null }[];
  budgets: Allowance[];
  quotas: Allowance[];
  utilities: { name: string; requests: number; bytesIn: number; bytesOut: number }[];
  topProxied: { repositories: Row[]; files: Row[] };
  topClients: { byBytes: Row[] };
}

/** The page's own byte format (web/src/chart.ts), to compare what it shows with the JSON. */
function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 || v >= 10 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

const skip = toolSkip('chromium') || toolSkip('java', ['-version']);

describe('admin dashboard in Chromium', { skip }, () => {
  let w: World;
  let browser: Browser;
  let url: string;
  before(async () => {
    w = await startWorld({
      git: false,
      overrides: {
        admin: { token: TOKEN },
        avatar: { upstream: 'none' },
        proxy: { totalBytes: '10GiB/day' },
        files: { quotaBytes: '1GiB' },
      },
    });
    url = w.proxy.url;
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await w?.close();
  });

  async function open(): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(60_000);
    const errors = collectErrors(page);
    await page.goto(`${url}/admin`, { waitUntil: 'domcontentloaded' });
    await page.waitForLoadState('networkidle');
    return { page, errors };
  }

  it('refuses without the token: JSON 401, and the page shows the sign-in form and no data', async () => {
    const r = await fetch(`${url}/rest/api/v1/admin/stats`);
    assert.equal(r.status, 401);
    assert.deepEqual(await r.json(), { status: 0, message: 'a valid admin token is required', data: null });

    const { page, errors } = await open();
    assert.equal(await page.locator('#admin-login-form').isVisible(), true);
    assert.equal(await page.locator('#admin-dash').isVisible(), false);
    await page.fill('#admin-token', `${TOKEN}-wrong`);
    await page.click('#admin-login-form button[type=submit]');
    await page.waitForFunction(() => document.getElementById('admin-login-status')?.textContent !== '');
    assert.equal(await page.textContent('#admin-login-status'), 'That token was not accepted.');
    assert.equal(await page.locator('#admin-dash').isVisible(), false);
    assert.equal(await page.locator('table, svg.chart').count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused token is not kept');
    // The browser logs the 401 of the refused fetch; nothing else may go wrong.
    assert.deepEqual(
      errors.filter((e) => !/401/.test(e)),
      [],
    );
    await page.close();
  });

  it('draws its charts after an upload, a proxied download and a diagram, and shows that traffic', async () => {
    const form = new FormData();
    form.append('file', new Blob([randomBytes(40_000)]), 'build.log'); // incompressible: stored as sent
    const up = await fetch(`${url}/api/file/admin-e2e.log`, { method: 'POST', body: form });
    assert.equal(up.status, 200, await up.text());
    // Twice: the second is served from the proxy cache.
    for (let i = 0; i < 2; i++) {
      const dl = await fetch(`${w.base}${ASSET}`);
      assert.equal(dl.status, 200);
      assert.equal(Buffer.from(await dl.arrayBuffer()).length, w.asset.length);
    }
    const uml = await fetch(`${url}${DIAGRAM}`);
    assert.equal(uml.status, 200, await uml.text());

    const { page, errors } = await open();
    await page.fill('#admin-token', TOKEN);
    await page.click('#admin-login-form button[type=submit]');
    await page.locator('svg.chart[data-chart="requests"] rect').first().waitFor();

    // What the page shows is what the JSON says (read with the same token).
    const res = await fetch(`${url}/rest/api/v1/admin/stats`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const s = ((await res.json()) as { data: Stats }).data;
    const util = (n: string) => s.utilities.find((u) => u.name === n);
    assert.ok((util('files')?.bytesIn ?? 0) >= 40_000, 'the upload body counts as bytes received');
    assert.ok((util('proxy')?.bytesOut ?? 0) >= w.asset.length, 'the download counts as bytes sent');
    assert.equal(util('diagrams')?.requests, 1);
    const file = s.topProxied.files.find((f) => f.key === ASSET.slice(1));
    assert.ok(file && (file.bytes ?? 0) >= w.asset.length, JSON.stringify(s.topProxied));
    assert.equal(s.topProxied.repositories[0]?.key, 'o/r');
    const budget = s.budgets.find((b) => b.name === 'proxy');
    assert.ok(
      budget && budget.used >= w.asset.length && budget.limit === 10 * 1024 ** 3,
      JSON.stringify(s.budgets),
    );
    const quota = s.quotas.find((q) => q.name === 'files');
    assert.ok(quota && quota.used >= 40_000 && quota.limit === 1024 ** 3, JSON.stringify(s.quotas));

    const utilities = await page.locator('table[data-table="utilities"] tbody tr').allTextContents();
    for (const name of ['files', 'proxy', 'diagrams'])
      assert.ok(
        utilities.some((r) => r.startsWith(name)),
        `${name} in ${utilities.join(' | ')}`,
      );
    const proxyRow = page.locator('table[data-table="utilities"] tbody tr', { hasText: /^proxy/ });
    assert.match(
      (await proxyRow.textContent()) ?? '',
      new RegExp(formatBytes(util('proxy')?.bytesOut ?? -1)),
    );
    const files = await page.locator('table[data-table="files"] tbody tr').first().textContent();
    assert.equal(files, `${ASSET.slice(1)}${formatBytes(file.bytes ?? 0)}${file.requests}`);
    assert.match(
      (await page.locator('table[data-table="repositories"] tbody tr').first().textContent()) ?? '',
      /^o\/r/,
    );
    assert.equal(
      await page
        .locator('table[data-table="clients-bytes"] tbody tr')
        .first()
        .locator('td')
        .first()
        .textContent(),
      '127.0.0.1',
    );
    assert.match((await page.textContent('[data-total="Requests"]')) ?? '', /^\d+$/);
    // Both time charts have columns, each with a text equivalent (title) and an accessible name.
    for (const chart of ['requests', 'bytes']) {
      const svg = page.locator(`svg.chart[data-chart="${chart}"]`);
      assert.equal(await svg.getAttribute('role'), 'img');
      assert.ok((await svg.locator('rect').count()) > 0, chart);
      assert.match((await svg.locator('title').first().textContent()) ?? '', /per minute, the last hour/);
    }
    assert.deepEqual(
      s.caches.find((c) => c.name === 'proxy'),
      { name: 'proxy', hits: 1, misses: 1, hitRatio: 0.5 },
    );
    assert.equal(
      await page.locator('table[data-table="caches"] tbody tr', { hasText: /^proxy/ }).textContent(),
      'proxy50%11',
    );
    const budgets = await page.locator('table[data-table="budgets"] tbody tr').allTextContents();
    assert.ok(
      budgets.some(
        (r) => r.startsWith('proxy (byte budget)') && r.includes(`${formatBytes(budget.used)} of 10 GiB`),
      ),
      budgets.join(' | '),
    );
    assert.ok(
      budgets.some(
        (r) => r.startsWith('files (storage quota)') && r.includes(`${formatBytes(quota.used)} of 1.0 GiB`),
      ),
      budgets.join(' | '),
    );

    // The token lives in this tab's sessionStorage only: not in the URL, not in a cookie.
    assert.equal(page.url(), `${url}/admin`);
    assert.deepEqual(await browser.context.cookies(), []);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('devutil-admin-token')), TOKEN);

    mkdirSync(OUT, { recursive: true });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const fill = await page
        .locator('svg.chart[data-chart="requests"] rect.s0')
        .first()
        .evaluate((r) => getComputedStyle(r).fill);
      assert.equal(fill, scheme === 'light' ? 'rgb(36, 89, 214)' : 'rgb(122, 162, 255)', `${scheme} columns`);
      assert.deepEqual((await page.evaluate(CONTRAST_JS)) as string[], [], `${scheme} contrast`);
      await page.screenshot({ path: join(OUT, `admin-${scheme}.png`), fullPage: true });
    }
    await page.click('button[data-window="day"]');
    await page.waitForFunction(() =>
      document.querySelector('svg.chart[data-chart="requests"] title')?.textContent?.includes('the last day'),
    );
    await page.click('#admin-signout');
    assert.equal(await page.locator('table, svg.chart').count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
