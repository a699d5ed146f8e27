// A Chrome DevTools Protocol connection over the browser's --remote-debugging-pipe: commands go in
// on its fd 3, replies and events come out on its fd 4, each a JSON message ended by a NUL byte. No
// port and no WebSocket: nothing else on the machine can drive the browser, and the browser shuts
// down when the pipe closes. A message over `maxMessage` bytes ends the connection (a page cannot
// make the server buffer without bound).
import type { Readable, Writable } from 'node:stream';
import { humanBytes } from '../../../infra/config/schema.ts';

export class CdpClosed extends Error {}
/** The browser answered a command with an error. */
export class CdpError extends Error {}

export type CdpListener = (method: string, params: Record<string, unknown>, sessionId?: string) => void;

interface Waiter {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
  method: string;
}

export class Cdp {
  private seq = 0;
  private readonly waiting = new Map<number, Waiter>();
  private readonly listeners = new Set<CdpListener>();
  private chunks: Buffer[] = [];
  private size = 0;
  /** Why the connection ended, once it has. */
  closed: Error | null = null;
  private readonly out: Writable;
  private readonly maxMessage: number;

  constructor(out: Writable, input: Readable, maxMessage: number) {
    this.out = out;
    this.maxMessage = maxMessage;
    input.on('data', (b: Buffer) => this.read(b));
    input.on('close', () => this.fail(new CdpClosed('the browser closed its DevTools pipe')));
    input.on('error', (e) => this.fail(new CdpClosed(`DevTools pipe: ${e.message}`)));
    out.on('error', (e) => this.fail(new CdpClosed(`DevTools pipe: ${e.message}`)));
  }

  send<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<T> {
    if (this.closed) return Promise.reject(this.closed);
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: Record<string, unknown>) => void, reject, method });
      this.out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  /** Every event (method, params, the session it came from); returns the unsubscribe function. */
  on(fn: CdpListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Ends the connection: every command waiting for an answer is rejected with `err`. */
  fail(err: Error): void {
    if (this.closed) return;
    this.closed = err;
    this.chunks = [];
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
    this.out.destroy();
  }

  private read(b: Buffer): void {
    let start = 0;
    for (let end = b.indexOf(0); end !== -1; end = b.indexOf(0, start)) {
      const part = b.subarray(start, end);
      const msg = this.chunks.length ? Buffer.concat([...this.chunks, part]) : part;
      this.chunks = [];
      this.size = 0;
      start = end + 1;
      this.dispatch(msg);
      if (this.closed) return;
    }
    if (start < b.length) {
      this.chunks.push(b.subarray(start));
      this.size += b.length - start;
      if (this.size > this.maxMessage)
        this.fail(new CdpClosed(`a DevTools message over ${humanBytes(this.maxMessage)}`));
    }
  }

  private dispatch(raw: Buffer): void {
    let m: {
      id?: number;
      method?: string;
      params?: Record<string, unknown>;
      result?: Record<string, unknown>;
      error?: { message?: string };
      sessionId?: string;
    };
    try {
      m = JSON.parse(raw.toString('utf8'));
    } catch {
      this.fail(new CdpClosed('the browser sent a message that is not JSON'));
      return;
    }
    if (typeof m.id === 'number') {
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.error) w.reject(new CdpError(`${w.method}: ${m.error.message ?? 'failed'}`));
      else w.resolve(m.result ?? {});
      return;
    }
    if (typeof m.method === 'string')
      for (const fn of this.listeners) fn(m.method, m.params ?? {}, m.sessionId);
  }
}
