// Headless Debian Chromium driven by playwright-core (never a downloaded browser), with a fresh
// profile per launch and the page's console errors collected for the web e2e tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** `args`: extra Chromium switches, e.g. `--host-resolver-rules=MAP v6.test [::1]` for test host names. */
export async function launch(opts: { javaScriptEnabled?: boolean; args?: string[] } = {}): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'devutil-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...ARGS, ...(opts.args ?? [])],
    viewport: { width: 1280, height: 900 },
    javaScriptEnabled: opts.javaScriptEnabled ?? true,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Console errors, page errors and failed requests of one page, for "renders without errors". */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  return errors;
}

/**
 * Every visible element with its own text, checked for WCAG AA contrast against the first opaque
 * background up its ancestors. A string, not a function: tsx's keepNames helpers do not exist in
 * the page.
 */
export const CONTRAST_JS = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const chan = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * chan(c[0]) + 0.7152 * chan(c[1]) + 0.0722 * chan(c[2]);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0.5) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.offsetParent || el.closest('.preview, button:disabled, [aria-hidden="true"]')) continue;
    const st = getComputedStyle(el);
    const a = lum(rgb(st.color));
    const b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) out.push(el.tagName + '#' + el.id + ' "' + el.textContent.trim().slice(0, 30) + '" ' + ratio.toFixed(2));
  }
  return out;
})()`;
