// The one browser pool of the server under the operator's settings (DEVUTIL_DIAGRAMS_MERMAID_*),
// shared by the Mermaid and BPMN pages: the settings, the recycling rule and the log line of each
// pool event.
import type { Logger } from 'pino';
import { type BrowserEvent, BrowserPool } from './browser-pool.ts';
import type { SandboxMode } from './chromium.ts';

/** The operator's browser settings (DEVUTIL_DIAGRAMS_MERMAID_*): totals over every page kind. */
export interface BrowserSettings {
  executable: string;
  browsers: number;
  pages: number;
  idleMs: number;
  heapMb: number;
  timeoutMs: number;
  /** Chromium's own sandbox (DEVUTIL_DIAGRAMS_MERMAID_BROWSER_SANDBOX). */
  sandbox: SandboxMode;
  log: Logger;
}

/** A page renders this many diagrams, then is replaced (page scripts keep some state per render). */
const RECYCLE_AFTER = 200;

/** Largest SVG a page of any kind returns (the page scripts check it too). */
export const MAX_SVG = 8 * 1024 * 1024;

/** Logged at info: a browser's start and exit, a page ready or switched; a page asked for is routine. */
const DETAILED = new Set<BrowserEvent>(['browser-start', 'browser-exit', 'page-open', 'page-switch']);

/**
 * The pool under the operator's settings, its events logged as `<kind> browser <event>` (a page's
 * event: `mermaid browser page-open`) or `browser <event>` (the browser's, for every kind):
 * failures at warn, DETAILED at info, the rest at debug. The first browser that runs without
 * Chromium's own sandbox under `auto` (it could not start here) is said at warn, once.
 */
export function settingsPool(o: BrowserSettings): BrowserPool {
  let warned = false;
  return new BrowserPool({
    executable: o.executable,
    browsers: o.browsers,
    pages: o.pages,
    timeoutMs: o.timeoutMs,
    // A cold Chromium plus a bundle of megabytes on a loaded machine: seconds, not the render's budget.
    startTimeoutMs: Math.max(30_000, o.timeoutMs),
    idleMs: o.idleMs,
    heapMb: o.heapMb,
    recycleAfter: RECYCLE_AFTER,
    maxOutput: MAX_SVG,
    sandbox: o.sandbox,
    onEvent: (event, detail) => {
      if (event === 'browser-start' && detail['sandbox'] === false && o.sandbox === 'auto' && !warned) {
        warned = true;
        o.log.warn(
          detail,
          "browser pool: Chromium's sandbox cannot start here (no user namespaces), so its browsers run without it (DEVUTIL_DIAGRAMS_MERMAID_BROWSER_SANDBOX=auto)",
        );
      }
      o.log[
        event === 'timeout' || event === 'crash' || event === 'blocked'
          ? 'warn'
          : DETAILED.has(event)
            ? 'info'
            : 'debug'
      ](detail, `${typeof detail['kind'] === 'string' ? `${detail['kind']} ` : ''}browser ${event}`);
    },
  });
}
