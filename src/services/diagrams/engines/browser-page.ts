// One browser page over CDP, as the pool (browser-pool.ts) drives it: opened as a tab of the
// browser's one window, with every request intercepted (the kind's files answered from memory, anything else
// refused), its renderer loaded once, a render called on it, and closed. The pool keeps the state:
// which page is busy, its deadline, what a lost page means for the render on it.
import type { Cdp } from './cdp.ts';
import { type PageKind, servePageRequest } from './page-kind.ts';
import type { RenderReply } from './render-job.ts';

/** The page's CDP handles, filled in as it opens (so that a failed open can still be closed). */
export interface PageTarget {
  kind: PageKind;
  /** Set by the pool when the page is dropped: an open still under way stops. */
  dead: boolean;
  targetId?: string;
  sessionId?: string;
  /** Remote object id of the page's globalThis. */
  global?: string;
  /** Stops listening to the page's events. */
  off?: () => void;
}

const CALL = 'function (source, options) { return this.__devutilRender(source, options); }';
const VIEWPORT = { width: 780, height: 493, deviceScaleFactor: 1, mobile: false };
/** How long closing a page or the browser may take before the browser is killed. */
export const CLOSE_WAIT_MS = 3000;

/**
 * Opens `page` in `cdp`'s browser within `deadlineMs`: a tab, its session,
 * request interception, the kind's page and its setup script. `lost` is called when the page
 * detaches or crashes later, `blocked` for each request it was refused.
 */
export async function openPage(
  page: PageTarget,
  cdp: Cdp,
  deadlineMs: number,
  on: { lost: () => void; blocked: (url: string) => void },
): Promise<void> {
  await within(deadlineMs, 'opening a page', async () => {
    // A tab of the browser's default context, not a browser context (and window) of its own: each
    // window brought a WebUI renderer for its omnibox, about 40 MiB PSS a page (issue 35). Each
    // tab still gets a renderer process of its own (a new browsing instance, measured with two
    // pages of one kind), and a page kept no more state across the diagrams of many clients than
    // a tab can keep across pages of its origin.
    const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    page.targetId = targetId;
    const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', {
      targetId,
      flatten: true,
    });
    page.sessionId = sessionId;
    if (page.dead) throw new Error('closed');
    // The page's size, which Mermaid's gantt, for one, lays out to: that of a tab of full headless
    // Chromium, whatever runs the page (its headless shell's are 800 x 600).
    await cdp.send('Emulation.setDeviceMetricsOverride', VIEWPORT, sessionId);
    let loaded: () => void = () => {};
    const load = new Promise<void>((r) => {
      loaded = r;
    });
    page.off = cdp.on((method, params, sid) => {
      if (method === 'Target.detachedFromTarget' && params['sessionId'] === sessionId) return on.lost();
      if (sid !== sessionId) return;
      if (method === 'Fetch.requestPaused')
        return servePageRequest(page.kind, cdp, sessionId, params, on.blocked);
      if (method === 'Inspector.targetCrashed') return on.lost();
      if (method === 'Page.loadEventFired') loaded();
    });
    await cdp.send('Inspector.enable', {}, sessionId);
    await cdp.send('Fetch.enable', { patterns: [{ urlPattern: '*' }] }, sessionId);
    await cdp.send('Page.enable', {}, sessionId);
    const nav = await cdp.send<{ errorText?: string }>(
      'Page.navigate',
      { url: `${page.kind.origin}/` },
      sessionId,
    );
    if (nav.errorText) throw new Error(`the renderer page did not load: ${nav.errorText}`);
    await load;
    const setup = await cdp.send<{ exceptionDetails?: unknown }>(
      'Runtime.evaluate',
      { expression: page.kind.setup, awaitPromise: true, returnByValue: true },
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

/**
 * Renders `source` on an open page: the renderer's answer as a reply (a script error is a failed
 * render); rejects when the page or its browser goes away under it.
 */
export async function callRender(
  page: PageTarget & { cdp?: Cdp },
  source: string,
  options: Record<string, string>,
  maxOutput: number,
): Promise<RenderReply> {
  const r = await page.cdp!.send<{ result?: { value?: unknown }; exceptionDetails?: unknown }>(
    'Runtime.callFunctionOn',
    {
      functionDeclaration: CALL,
      objectId: page.global,
      arguments: [{ value: source }, { value: options }],
      awaitPromise: true,
      returnByValue: true,
    },
    page.sessionId,
  );
  return r.exceptionDetails
    ? { ok: false, kind: 'failed', message: describe(r.exceptionDetails) }
    : replyOf(r.result?.value, maxOutput);
}

/** Closes the page's target; rejects past CLOSE_WAIT_MS. */
export function closePage(cdp: Cdp, page: PageTarget): Promise<void> {
  return within(CLOSE_WAIT_MS, 'closing a page', async () => {
    await cdp.send('Target.closeTarget', { targetId: page.targetId });
  });
}

/** A renderer's answer as a reply: its SVG (within maxOutput) or its error, of a known kind. */
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

/** A script exception's first line, short. */
function describe(details: unknown): string {
  const d = details as { exception?: { description?: string }; text?: string };
  return String(d.exception?.description ?? d.text ?? 'exception')
    .split('\n')[0]!
    .slice(0, 500);
}

/** `fn`'s result, or a rejection naming `what` once `ms` have passed. */
export async function within<T>(ms: number, what: string, fn: () => Promise<T>): Promise<T> {
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
