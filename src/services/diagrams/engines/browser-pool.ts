// The bounded headless-browser pool for the diagrams that only a browser draws (the Mermaid types
// beautiful-mermaid does not, BPMN). At most `browsers` Chromium processes, each with at most
// `pages` pages, whatever their kind (page-kind.ts): one Chromium serves every kind, so the caps
// are totals. A page loads its kind's renderer once (mermaid-browser.ts, bpmn-browser.ts) and then
// renders diagrams of that kind only, one at a time, many times over, until `recycleAfter` renders;
// at the cap, an idle page of a kind nobody waits for is closed to open one of the kind waited for.
// Each page is a tab with a renderer process of its own (browser-page.ts), and every request it
// makes is intercepted: the page's own files are answered from memory, anything else is refused. A
// render past `timeoutMs` crashes its renderer process and closes the page; a browser that does not
// answer that within a few seconds is killed with its whole process group (chromium.ts). A browser
// that dies (kill -9, out of memory) takes its pages with it: the renders that were on them go once
// more to a new browser. A browser whose pages of every kind are idle exits after `idleMs`.
// Admission (fair queue, client share) is the caller's; this only dispatches to free pages. The
// caller admits at most `browsers` x `pages` renders at once (renderer.ts), so a waiting render
// always finds a page of its kind, room to open one, or an idle page of another kind to give way: a
// free page going to a newer render of its own kind never starves an older render of another kind.
import { CLOSE_WAIT_MS, callRender, closePage, openPage, within } from './browser-page.ts';
import type { Cdp } from './cdp.ts';
import { type Chromium, launchChromium, type SandboxMode } from './chromium.ts';
import type { PageKind } from './page-kind.ts';
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
  /** Where the browsers' profile directories are made (tests find their processes by it). */
  profileRoot?: string;
  /** Chromium's own sandbox (chromium.ts; default on). */
  sandbox?: SandboxMode;
  onEvent?: (event: BrowserEvent, detail: Record<string, unknown>) => void;
}

/**
 * page-new: a page is being opened for a waiting render; page-open: it is ready; page-switch: an
 * idle page is closed (at the cap) to make room for a page of another kind. Page events carry the
 * page's `kind` in their detail; browser-start and browser-exit concern every kind.
 */
export type BrowserEvent =
  | 'browser-start'
  | 'browser-exit'
  | 'page-new'
  | 'page-open'
  | 'page-switch'
  | 'timeout'
  | 'crash'
  | 'blocked';

interface KindStats {
  pages: number;
  busy: number;
  queued: number;
}

export interface PoolStats extends KindStats {
  browsers: number;
  /** By page kind (its name); a kind with no page and no render waiting is absent. */
  kinds: Map<string, KindStats>;
}

/** The browser cannot be started here (a wrong path, a missing library): 503. */
export class BrowserUnavailable extends Error {}

interface Pending {
  kind: PageKind;
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
  kind: PageKind;
  browser: Browser;
  ready: boolean;
  dead: boolean;
  cdp?: Cdp;
  targetId?: string;
  sessionId?: string;
  /** Remote object id of the page's globalThis. */
  global?: string;
  busy: Pending | null;
  renders: number;
  timer: NodeJS.Timeout | null;
  off?: () => void;
}

export class BrowserPool {
  private readonly o: BrowserPoolOptions;
  private readonly browsers = new Set<Browser>();
  private readonly waiting: Pending[] = [];
  /** The kinds drawn since the last browser exited: their files are released with it. */
  private readonly used = new Set<PageKind>();
  private closed = false;
  /** Browsers started since the pool was made (tests look at restarts). */
  started = 0;

  constructor(o: BrowserPoolOptions) {
    this.o = o;
  }

  stats(): PoolStats {
    const kinds = new Map<string, KindStats>();
    const of = (k: PageKind) => {
      const s = kinds.get(k.name) ?? { pages: 0, busy: 0, queued: 0 };
      kinds.set(k.name, s);
      return s;
    };
    for (const b of this.browsers)
      for (const p of b.pages) {
        const s = of(p.kind);
        s.pages++;
        if (p.busy) s.busy++;
      }
    for (const p of this.waiting) of(p.kind).queued++;
    const all = [...kinds.values()];
    const sum = (f: (s: KindStats) => number) => all.reduce((n, s) => n + f(s), 0);
    return {
      browsers: this.browsers.size,
      pages: sum((s) => s.pages),
      busy: sum((s) => s.busy),
      queued: this.waiting.length,
      kinds,
    };
  }

  /** Process ids of the live browsers (tests). */
  pids(): number[] {
    return [...this.browsers].flatMap((b) => (b.chromium ? [b.chromium.pid] : []));
  }

  /** Renders `source` on a page of `kind`. */
  run(kind: PageKind, source: string, options: Record<string, string> = {}): Promise<RenderReply> {
    if (this.closed) return Promise.reject(new RenderPoolClosed('the diagram renderer is shutting down'));
    return new Promise<RenderReply>((resolve, reject) => {
      this.used.add(kind);
      this.waiting.push({ kind, source, options, resolve, reject, retried: false });
      this.dispatch();
    });
  }

  private event(event: BrowserEvent, kind: PageKind | null, detail: Record<string, unknown>): void {
    this.o.onEvent?.(event, { ...detail, ...(kind ? { kind: kind.name } : {}) });
  }

  private dispatch(): void {
    if (this.closed) return;
    const opening = new Map<PageKind, number>();
    const idle = new Map<PageKind, Page[]>();
    for (const b of this.browsers)
      for (const p of b.pages) {
        if (!p.ready) opening.set(p.kind, (opening.get(p.kind) ?? 0) + 1);
        else if (!p.busy) {
          const free = idle.get(p.kind);
          if (free) free.push(p);
          else idle.set(p.kind, [p]);
        }
      }
    // Each waiting render, oldest first, takes a free page of its kind: a kind whose pages are all
    // busy (or running away) holds up no other kind's renders.
    for (let i = 0; i < this.waiting.length; ) {
      const p = this.waiting[i]!;
      const page = idle.get(p.kind)?.pop();
      if (!page) i++;
      else {
        this.waiting.splice(i, 1);
        this.start(page, p);
      }
    }
    // Open pages for the renders no page will take, oldest first: fill the browsers there are before
    // starting one; at the cap, close an idle page of another kind (no render of its kind waits, or
    // it would have taken it) to make room.
    for (const p of this.waiting) {
      const n = opening.get(p.kind) ?? 0;
      if (n > 0) {
        opening.set(p.kind, n - 1);
        continue;
      }
      if (this.open(p.kind)) continue;
      const spare = [...idle.values()].find((pages) => pages.length > 0)?.pop();
      if (!spare) break;
      this.event('page-switch', spare.kind, { pid: spare.browser.chromium?.pid, to: p.kind.name });
      this.retire(spare);
      if (!this.open(p.kind)) break;
    }
  }

  private open(kind: PageKind): boolean {
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
    const page: Page = { kind, browser, ready: false, dead: false, busy: null, renders: 0, timer: null };
    browser.pages.add(page);
    this.event('page-new', kind, { pid: browser.chromium?.pid, pages: browser.pages.size });
    this.prepare(page).then(
      () => {
        if (page.dead) return;
        page.ready = true;
        this.event('page-open', kind, { pid: browser.chromium?.pid });
        this.dispatch();
        this.armIdle(browser);
      },
      (err: Error) => {
        if (page.dead) return;
        this.retire(page);
        // The browser died while the page opened: its exit (browserGone) dispatches again.
        if (browser.chromium?.cdp.closed) return;
        // No other page of its kind can take the renders waiting for one: they get the reason now,
        // not at their deadline (another kind's renders wait on, for their own pages).
        if (!this.hasPages(kind)) {
          const failed = this.waiting.filter((p) => p.kind === kind);
          this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((p) => p.kind !== kind));
          for (const p of failed)
            p.reject(err instanceof BrowserUnavailable ? err : new BrowserUnavailable(err.message));
        }
        this.dispatch();
      },
    );
    return true;
  }

  private hasPages(kind: PageKind): boolean {
    for (const b of this.browsers) for (const p of b.pages) if (p.kind === kind) return true;
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
      ...(this.o.sandbox ? { sandbox: this.o.sandbox } : {}),
    }).then(
      (c) => {
        browser.chromium = c;
        this.started++;
        this.event('browser-start', null, { pid: c.pid, sandbox: c.sandboxed });
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
    this.event('browser-exit', null, { pid: c.pid });
    for (const p of [...browser.pages]) this.lost(p, 'browser');
    this.dispatch();
    // No browser came back for a render put back: what pages load is not needed until one does.
    if (this.browsers.size > 0 || this.waiting.length > 0) return;
    for (const kind of this.used) kind.release?.();
    this.used.clear();
  }

  /** Opens a page (a tab, its own renderer process), loads the renderer, intercepting every request. */
  private async prepare(page: Page): Promise<void> {
    const c = await page.browser.starting;
    page.cdp = c.cdp;
    await openPage(page, c.cdp, this.o.startTimeoutMs, {
      lost: () => this.lost(page, 'page'),
      blocked: (url) => this.event('blocked', page.kind, { url }),
    });
  }

  private start(page: Page, p: Pending): void {
    const b = page.browser;
    if (b.idle) clearTimeout(b.idle);
    b.idle = null;
    page.busy = p;
    page.renders++;
    page.timer = setTimeout(() => this.timeout(page), this.o.timeoutMs);
    callRender(page, p.source, p.options, this.o.maxOutput).then(
      (reply) => {
        if (page.busy !== p) return;
        this.settle(page);
        p.resolve(reply);
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
    this.event('timeout', page.kind, { pid: page.browser.chromium?.pid });
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
        this.event('crash', page.kind, { pid: page.browser.chromium?.pid, why });
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
    closePage(cdp, page).catch(() => {
      if (!cdp.closed) {
        this.event('crash', page.kind, { pid: c.pid, why: 'the browser did not close a page' });
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
