// The bounded headless-browser pool for the diagrams that only a browser draws (the Mermaid types
// beautiful-mermaid does not). At most `browsers` Chromium processes, each with at most `pages`
// pages; a page loads its renderer once (mermaid-browser.ts) and then renders one diagram at a time,
// many times over, until `recycleAfter` renders. Each page is alone in a browser context (its own
// renderer process, nothing shared with the others) and every request it makes is intercepted: the
// page's own files are answered from memory, anything else is refused. A render past `timeoutMs`
// crashes its renderer process and closes the page; a browser that does not answer that within
// a few seconds is killed with its whole process group (chromium.ts). A browser that dies (kill -9,
// out of memory) takes its pages with it: the renders that were on them go once more to a new
// browser. An idle browser exits after `idleMs`. Admission (fair queue, client share) is the
// caller's; this only dispatches to free pages.
import type { Cdp } from './cdp.ts';
import { type Chromium, launchChromium } from './chromium.ts';
import { type PageKind, servePageRequest } from './page-kind.ts';
import { RenderCrashed, RenderPoolClosed, type RenderReply, RenderTimeout } from './render-job.ts';

export interface BrowserPoolOptions {
  executable: string;
  browsers: number;
  pages: number;
  timeoutMs: number;
  /** A browser start and a page load (cold, on a busy machine) may take this long. */
  startTimeoutMs: number;
  idleMs: number;
  heapMb: number;
  recycleAfter: number;
  /** Largest SVG a page may return. */
  maxOutput: number;
  kind: PageKind;
  /** Where the browsers' profile directories are made (tests find their processes by it). */
  profileRoot?: string;
  onEvent?: (event: BrowserEvent, detail: Record<string, unknown>) => void;
}

/** page-new: a page is being opened for a waiting render; page-open: it is ready. */
export type BrowserEvent =
  | 'browser-start'
  | 'browser-exit'
  | 'page-new'
  | 'page-open'
  | 'timeout'
  | 'crash'
  | 'blocked';

/** The browser cannot be started here (a wrong path, a missing library): 503. */
export class BrowserUnavailable extends Error {}

interface Pending {
  source: string;
  options: Record<string, string>;
  resolve: (r: RenderReply) => void;
  reject: (e: Error) => void;
  /** Put back once already because its browser died under it. */
  retried: boolean;
}

interface Browser {
  chromium: Chromium | null;
  starting: Promise<Chromium>;
  pages: Set<Page>;
  idle: NodeJS.Timeout | null;
  /** Closing (idle): takes no new page, still counts against the cap until it has exited. */
  stopping: boolean;
}

interface Page {
  browser: Browser;
  ready: boolean;
  dead: boolean;
  cdp?: Cdp;
  targetId?: string;
  contextId?: string;
  sessionId?: string;
  /** Remote object id of the page's globalThis. */
  global?: string;
  busy: Pending | null;
  renders: number;
  timer: NodeJS.Timeout | null;
  off?: () => void;
}

const CALL = 'function (source, options) { return this.__devutilRender(source, options); }';
const CLOSE_WAIT_MS = 3000;

export class BrowserPool {
  private readonly o: BrowserPoolOptions;
  private readonly browsers = new Set<Browser>();
  private readonly waiting: Pending[] = [];
  private closed = false;
  /** Browsers started since the pool was made (tests look at restarts). */
  started = 0;

  constructor(o: BrowserPoolOptions) {
    this.o = o;
  }

  stats(): { browsers: number; pages: number; busy: number; queued: number } {
    let pages = 0;
    let busy = 0;
    for (const b of this.browsers)
      for (const p of b.pages) {
        pages++;
        if (p.busy) busy++;
      }
    return { browsers: this.browsers.size, pages, busy, queued: this.waiting.length };
  }

  /** Process ids of the live browsers (tests). */
  pids(): number[] {
    return [...this.browsers].flatMap((b) => (b.chromium ? [b.chromium.pid] : []));
  }

  run(source: string, options: Record<string, string> = {}): Promise<RenderReply> {
    if (this.closed) return Promise.reject(new RenderPoolClosed('the diagram renderer is shutting down'));
    return new Promise<RenderReply>((resolve, reject) => {
      this.waiting.push({ source, options, resolve, reject, retried: false });
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (this.closed) return;
    let opening = 0;
    const idle: Page[] = [];
    for (const b of this.browsers)
      for (const p of b.pages) {
        if (!p.ready) opening++;
        else if (!p.busy) idle.push(p);
      }
    while (this.waiting.length > 0 && idle.length > 0) this.start(idle.pop()!, this.waiting.shift()!);
    // Open pages for the renders no page will take: fill the browsers there are before starting one.
    for (let want = this.waiting.length - opening; want > 0; want--) if (!this.open()) break;
  }

  private open(): boolean {
    let browser: Browser | undefined;
    // A browser whose DevTools pipe closed is dying: it takes no page (one would fail at once, and
    // again, without yielding), and counts against the cap until its process has exited.
    for (const b of this.browsers)
      if (!b.stopping && !b.chromium?.cdp.closed && b.pages.size < this.o.pages) browser = b;
    if (!browser) {
      if (this.browsers.size >= this.o.browsers) return false;
      browser = this.startBrowser();
    }
    if (browser.idle) clearTimeout(browser.idle);
    browser.idle = null;
    const page: Page = { browser, ready: false, dead: false, busy: null, renders: 0, timer: null };
    browser.pages.add(page);
    this.o.onEvent?.('page-new', { pid: browser.chromium?.pid, pages: browser.pages.size });
    this.prepare(page).then(
      () => {
        if (page.dead) return;
        page.ready = true;
        this.o.onEvent?.('page-open', { pid: browser.chromium?.pid });
        this.dispatch();
        this.armIdle(browser);
      },
      (err: Error) => {
        if (page.dead) return;
        this.retire(page);
        // The browser died while the page opened: its exit (browserGone) dispatches again.
        if (browser.chromium?.cdp.closed) return;
        // Nothing else can take the waiting renders: they get the reason now, not at their deadline.
        if (!this.hasPages())
          for (const p of this.waiting.splice(0))
            p.reject(err instanceof BrowserUnavailable ? err : new BrowserUnavailable(err.message));
        this.dispatch();
      },
    );
    return true;
  }

  private hasPages(): boolean {
    for (const b of this.browsers) if (b.pages.size > 0) return true;
    return false;
  }

  private startBrowser(): Browser {
    const browser: Browser = {
      chromium: null,
      starting: null!,
      pages: new Set(),
      idle: null,
      stopping: false,
    };
    this.browsers.add(browser);
    browser.starting = launchChromium({
      executable: this.o.executable,
      heapMb: this.o.heapMb,
      startTimeoutMs: this.o.startTimeoutMs,
      maxMessage: this.o.maxOutput * 2 + 1024 * 1024,
      ...(this.o.profileRoot ? { profileRoot: this.o.profileRoot } : {}),
    }).then(
      (c) => {
        browser.chromium = c;
        this.started++;
        this.o.onEvent?.('browser-start', { pid: c.pid });
        void c.exited.then(() => this.browserGone(browser, c));
        if (this.closed) c.kill();
        return c;
      },
      (err: Error) => {
        this.browsers.delete(browser);
        throw new BrowserUnavailable(`the browser ${this.o.executable} cannot start: ${err.message}`);
      },
    );
    return browser;
  }

  /** The browser exited (killed, crashed, closed): its pages are gone, their renders go once more. */
  private browserGone(browser: Browser, c: Chromium): void {
    this.browsers.delete(browser);
    if (browser.idle) clearTimeout(browser.idle);
    this.o.onEvent?.('browser-exit', { pid: c.pid });
    for (const p of [...browser.pages]) this.lost(p, 'browser');
    this.dispatch();
    // No browser came back for a render put back: what pages load is not needed until one does.
    if (this.browsers.size === 0) this.o.kind.release?.();
  }

  /** Opens a page in a browser context of its own, loads the renderer, intercepting every request. */
  private async prepare(page: Page): Promise<void> {
    const c = await page.browser.starting;
    const cdp = c.cdp;
    page.cdp = cdp;
    const deadline = this.o.startTimeoutMs;
    await within(deadline, 'opening a page', async () => {
      const { browserContextId } = await cdp.send<{ browserContextId: string }>(
        'Target.createBrowserContext',
      );
      page.contextId = browserContextId;
      const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', {
        url: 'about:blank',
        browserContextId,
      });
      page.targetId = targetId;
      const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', {
        targetId,
        flatten: true,
      });
      page.sessionId = sessionId;
      if (page.dead) throw new Error('closed');
      let loaded: () => void = () => {};
      const load = new Promise<void>((r) => {
        loaded = r;
      });
      page.off = cdp.on((method, params, sid) => {
        if (method === 'Target.detachedFromTarget' && params['sessionId'] === sessionId)
          return this.lost(page, 'page');
        if (sid !== sessionId) return;
        if (method === 'Fetch.requestPaused')
          return servePageRequest(this.o.kind, cdp, sessionId, params, (url) =>
            this.o.onEvent?.('blocked', { url }),
          );
        if (method === 'Inspector.targetCrashed') return this.lost(page, 'page');
        if (method === 'Page.loadEventFired') loaded();
      });
      await cdp.send('Inspector.enable', {}, sessionId);
      await cdp.send('Fetch.enable', { patterns: [{ urlPattern: '*' }] }, sessionId);
      await cdp.send('Page.enable', {}, sessionId);
      const nav = await cdp.send<{ errorText?: string }>(
        'Page.navigate',
        { url: `${this.o.kind.origin}/` },
        sessionId,
      );
      if (nav.errorText) throw new Error(`the renderer page did not load: ${nav.errorText}`);
      await load;
      const setup = await cdp.send<{ exceptionDetails?: unknown }>(
        'Runtime.evaluate',
        { expression: this.o.kind.setup, awaitPromise: true, returnByValue: true },
        sessionId,
      );
      if (setup.exceptionDetails)
        throw new Error(`the renderer did not start: ${describe(setup.exceptionDetails)}`);
      const g = await cdp.send<{ result: { objectId?: string } }>(
        'Runtime.evaluate',
        { expression: 'globalThis' },
        sessionId,
      );
      page.global = g.result.objectId;
    });
  }

  private start(page: Page, p: Pending): void {
    const b = page.browser;
    if (b.idle) clearTimeout(b.idle);
    b.idle = null;
    page.busy = p;
    page.renders++;
    page.timer = setTimeout(() => this.timeout(page), this.o.timeoutMs);
    page
      .cdp!.send<{ result?: { value?: unknown }; exceptionDetails?: unknown }>(
        'Runtime.callFunctionOn',
        {
          functionDeclaration: CALL,
          objectId: page.global,
          arguments: [{ value: p.source }, { value: p.options }],
          awaitPromise: true,
          returnByValue: true,
        },
        page.sessionId,
      )
      .then(
        (r) => {
          if (page.busy !== p) return;
          this.settle(page);
          p.resolve(
            r.exceptionDetails
              ? { ok: false, kind: 'failed', message: describe(r.exceptionDetails) }
              : replyOf(r.result?.value, this.o.maxOutput),
          );
          if (page.renders >= this.o.recycleAfter) this.retire(page);
          this.dispatch();
          this.armIdle(b);
        },
        () => {
          if (page.busy === p) this.lost(page, page.cdp?.closed ? 'browser' : 'page');
        },
      );
  }

  private settle(page: Page): void {
    if (page.timer) clearTimeout(page.timer);
    page.timer = null;
    page.busy = null;
  }

  /**
   * Past the deadline: the page's renderer is crashed (Page.crash is handled off its main thread,
   * so a script in an endless loop cannot hold it) and the page closed; a browser that does not
   * confirm within a few seconds is killed with its process group.
   */
  private timeout(page: Page): void {
    const p = page.busy;
    if (!p) return;
    this.settle(page);
    this.o.onEvent?.('timeout', { pid: page.browser.chromium?.pid });
    p.reject(new RenderTimeout(`no result within ${this.o.timeoutMs} ms`));
    if (page.cdp && page.sessionId) void page.cdp.send('Page.crash', {}, page.sessionId).catch(() => {});
    this.retire(page);
    this.dispatch();
  }

  /** A page that died under a render: the render fails (its page) or goes once more (its browser). */
  private lost(page: Page, why: 'page' | 'browser'): void {
    if (page.dead) return;
    const p = page.busy;
    this.settle(page);
    if (p) {
      if (why === 'browser' && !p.retried && !this.closed) {
        p.retried = true;
        this.waiting.unshift(p);
      } else {
        this.o.onEvent?.('crash', { pid: page.browser.chromium?.pid, why });
        p.reject(
          new RenderCrashed(
            why === 'page'
              ? 'the diagram crashed its browser page (out of memory, or the renderer failed)'
              : 'the browser died twice under this diagram',
            false,
          ),
        );
      }
    }
    this.retire(page);
    this.dispatch();
  }

  /** Removes a page from the pool now; closes it in the browser (and kills a browser that hangs). */
  private retire(page: Page): void {
    if (page.dead) return;
    this.drop(page);
    const c = page.browser.chromium;
    if (!c || c.cdp.closed || !page.targetId) return;
    const cdp = c.cdp;
    void within(CLOSE_WAIT_MS, 'closing a page', async () => {
      await cdp.send('Target.closeTarget', { targetId: page.targetId });
      if (page.contextId)
        await cdp.send('Target.disposeBrowserContext', { browserContextId: page.contextId });
    }).catch(() => {
      if (!cdp.closed) {
        this.o.onEvent?.('crash', { pid: c.pid, why: 'the browser did not close a page' });
        c.kill();
      }
    });
    this.armIdle(page.browser);
  }

  private drop(page: Page): void {
    page.dead = true;
    page.off?.();
    page.browser.pages.delete(page);
    if (page.timer) clearTimeout(page.timer);
  }

  private armIdle(b: Browser): void {
    if (this.o.idleMs <= 0 || b.idle || !this.browsers.has(b)) return;
    for (const p of b.pages) if (p.busy || !p.ready) return;
    if (this.waiting.length > 0) return;
    b.idle = setTimeout(() => {
      b.idle = null;
      for (const p of b.pages) if (p.busy || !p.ready) return;
      void this.stopBrowser(b);
    }, this.o.idleMs);
    b.idle.unref();
  }

  /** Browser.close, then the process group killed if it is still there. */
  private async stopBrowser(b: Browser): Promise<void> {
    b.stopping = true;
    const c = b.chromium ?? (await b.starting.catch(() => null));
    if (!c) return;
    for (const p of [...b.pages]) this.drop(p);
    await within(CLOSE_WAIT_MS, 'closing the browser', () => c.cdp.send('Browser.close')).catch(() => {});
    c.kill();
    await c.exited;
  }

  async close(): Promise<void> {
    this.closed = true;
    const err = new RenderPoolClosed('the diagram renderer is shutting down');
    for (const p of this.waiting.splice(0)) p.reject(err);
    const all = [...this.browsers];
    for (const b of all) {
      if (b.idle) clearTimeout(b.idle);
      for (const p of b.pages) {
        const job = p.busy;
        this.settle(p);
        job?.reject(err);
      }
    }
    await Promise.all(all.map((b) => this.stopBrowser(b)));
  }
}

function replyOf(v: unknown, maxOutput: number): RenderReply {
  const r = (v ?? {}) as { ok?: boolean; svg?: unknown; kind?: unknown; message?: unknown; line?: unknown };
  if (r.ok === true && typeof r.svg === 'string') {
    if (r.svg.length > maxOutput) return { ok: false, kind: 'failed', message: 'the diagram is too large' };
    return { ok: true, body: r.svg };
  }
  const kind = r.kind === 'syntax' ? 'syntax' : r.kind === 'unsupported' ? 'unsupported' : 'failed';
  return {
    ok: false,
    kind,
    message: String(r.message ?? 'the renderer failed').slice(0, 2000),
    ...(typeof r.line === 'number' ? { line: r.line } : {}),
  };
}

function describe(details: unknown): string {
  const d = details as { exception?: { description?: string }; text?: string };
  return String(d.exception?.description ?? d.text ?? 'exception')
    .split('\n')[0]!
    .slice(0, 500);
}

async function within<T>(ms: number, what: string, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      fn(),
      new Promise<never>((_r, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
