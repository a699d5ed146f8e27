// A browser pool under the operator's settings (DEVUTIL_DIAGRAMS_MERMAID_*), as the Mermaid and BPMN
// renderers make theirs: the settings, the recycling rule and the log line of each pool event.
import type { Logger } from 'pino';
import { type BrowserEvent, BrowserPool } from './browser-pool.ts';
import type { PageKind } from './page-kind.ts';

/** The operator's browser settings a page kind's pool runs under (DEVUTIL_DIAGRAMS_MERMAID_*). */
export interface BrowserSettings {
  executable: string;
  browsers: number;
  pages: number;
  idleMs: number;
  heapMb: number;
  timeoutMs: number;
  log: Logger;
}

/** A page renders this many diagrams, then is replaced (page scripts keep some state per render). */
const RECYCLE_AFTER = 200;

/**
 * A pool of `kind` pages under the operator's settings, its events logged as `<name> browser
 * <event>`: failures at warn, `detailed` events at info, the rest at debug.
 */
export function settingsPool(
  o: BrowserSettings,
  name: string,
  kind: PageKind,
  maxOutput: number,
  detailed: (event: BrowserEvent) => boolean = () => false,
): BrowserPool {
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
    maxOutput,
    kind,
    onEvent: (event, detail) =>
      o.log[
        event === 'timeout' || event === 'crash' || event === 'blocked'
          ? 'warn'
          : detailed(event)
            ? 'info'
            : 'debug'
      ](detail, `${name} browser ${event}`),
  });
}
