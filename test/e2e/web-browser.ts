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
