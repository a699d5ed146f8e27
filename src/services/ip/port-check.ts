// /rest/api/v1/ip/port/<port>: whether a TCP port of the caller's own address answers from here
// (echoip's /port, whatismyip's TCP scan): one handshake, never a byte sent. Only the caller's own
// address is ever dialled, so the check cannot be pointed at anyone else; a small total of checks
// dial at once, one per caller, each bounded by a short connect timeout.
import { connect, type Socket } from 'node:net';
import { FairQueue } from '../../infra/limits/fair-queue.ts';

/**
 * `open`: the handshake completed. `closed`: the host answered with a reset (nothing listens).
 * `filtered`: no answer within the timeout, or the network said the host cannot be reached
 * (a firewall that drops, a host that is off, a NAT with no forwarding).
 */
export type PortState = 'open' | 'closed' | 'filtered';

export interface PortResult {
  state: PortState;
  /** Milliseconds from the first SYN to the answer, or to the timeout. */
  ms: number;
}

/** The state a failed connect stands for: a reset is an answer, everything else is not. */
export function stateOf(code: string | undefined): Exclude<PortState, 'open'> {
  return code === 'ECONNREFUSED' ? 'closed' : 'filtered';
}

/** Dials `host:port` once and hangs up at once (a reset on open, so no TIME_WAIT is left here). */
export function probe(
  host: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<PortResult> {
  const started = process.hrtime.bigint();
  const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  return new Promise((resolve) => {
    let sock: Socket | null = null;
    let done = false;
    const finish = (state: PortState) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (sock && !sock.destroyed) {
        if (state === 'open' && typeof sock.resetAndDestroy === 'function') sock.resetAndDestroy();
        else sock.destroy();
      }
      resolve({ state, ms: elapsed() });
    };
    const onAbort = () => finish('filtered');
    const timer = setTimeout(() => finish('filtered'), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    sock = connect({ host, port, noDelay: true });
    sock.once('connect', () => finish('open'));
    sock.once('error', (err: NodeJS.ErrnoException) => finish(stateOf(err.code)));
    if (signal?.aborted) onAbort();
  });
}

export interface PortCheckOptions {
  timeoutMs: number;
  concurrency: number;
}

export class PortCheck {
  private readonly queue: FairQueue;
  private readonly closing = new AbortController();
  private readonly o: PortCheckOptions;

  constructor(o: PortCheckOptions) {
    this.o = o;
    // One dial at a time per caller (clientShare 1/n rounds to one slot); as many callers may wait
    // as may dial, a check being short. Past that: QueueFull, answered 503.
    this.queue = new FairQueue({
      concurrency: o.concurrency,
      queueLength: o.concurrency,
      clientShare: 1 / o.concurrency,
    });
  }

  /** Checks `port` of `ip` (the caller's address) under `client`'s share; throws QueueFull. */
  check(client: string, ip: string, port: number): Promise<PortResult> {
    return this.queue.run(client, () => probe(ip, port, this.o.timeoutMs, this.closing.signal));
  }

  /** Ends the dials under way (the server is closing): they report `filtered`. */
  close(): void {
    this.closing.abort();
  }
}
