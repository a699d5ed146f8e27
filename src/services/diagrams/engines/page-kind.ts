// What a browser pool's pages are: a page kind (the renderer's files, answered from memory under an
// origin that is never resolved, its CSP and setup script; one pool holds pages of every kind) and
// the answer to each request a page makes (its own files, or refused).
import { readFileSync } from 'node:fs';
import type { Cdp } from './cdp.ts';

/** What a page serves and runs: the renderer's files, its CSP and the script that sets it up. */
export interface PageKind {
  /** What it draws ('mermaid', 'bpmn'): log lines and metrics of its pages are by this name. */
  readonly name: string;
  /** The page's origin: never resolved, every request to it is answered from `files`. */
  readonly origin: string;
  /** Path -> file; "/" is the page. */
  files(): ReadonlyMap<string, { type: string; body: Buffer }>;
  /** Content-Security-Policy of every file answered. */
  readonly csp: string;
  /** Evaluated once the page has loaded; defines globalThis.__devutilRender(source, options). */
  readonly setup: string;
  /**
   * The pool has no browser left (idle, closed): files read from disk are dropped, and read again
   * when a browser loads a page next. Mermaid's bundle is 3.5 MiB, kept by the server otherwise.
   */
  release?(): void;
}

/**
 * A page kind of one HTML page and one script file (a drawing library's bundle), both answered from
 * memory under `origin`: the script is read from `scriptPath` on the first page load and kept until
 * the pool's last browser is gone.
 */
export function scriptPage(o: {
  name: string;
  origin: string;
  html: string;
  setup: string;
  scriptUrl: string;
  scriptPath: string;
}): PageKind {
  let files: Map<string, { type: string; body: Buffer }> | undefined;
  return {
    name: o.name,
    origin: o.origin,
    csp: "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; font-src data:",
    setup: o.setup,
    files: () => {
      files ??= new Map([
        ['/', { type: 'text/html; charset=utf-8', body: Buffer.from(o.html) }],
        [o.scriptUrl, { type: 'text/javascript; charset=utf-8', body: readFileSync(o.scriptPath) }],
      ]);
      return files;
    },
    release: () => {
      files = undefined;
    },
  };
}

/** A request of a page (Fetch.requestPaused): its own files from memory, anything else refused. */
export function servePageRequest(
  k: PageKind,
  cdp: Cdp,
  sessionId: string,
  params: Record<string, unknown>,
  blocked: (url: string) => void,
): void {
  const requestId = String(params['requestId']);
  const url = String((params['request'] as { url?: string } | undefined)?.url ?? '');
  const file = url.startsWith(`${k.origin}/`) ? k.files().get(url.slice(k.origin.length)) : undefined;
  if (!file) {
    blocked(url.slice(0, 200));
    void cdp
      .send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }, sessionId)
      .catch(() => {});
    return;
  }
  void cdp
    .send(
      'Fetch.fulfillRequest',
      {
        requestId,
        responseCode: 200,
        responseHeaders: [
          { name: 'Content-Type', value: file.type },
          { name: 'Content-Security-Policy', value: k.csp },
          { name: 'Cache-Control', value: 'no-store' },
        ],
        body: file.body.toString('base64'),
      },
      sessionId,
    )
    .catch(() => {});
}
