// A proxied body on its way to the client: bytes counted and charged to the byte budget in batches
// (a transfer that goes past the budget is cut), and socket writes coalesced. Hooked where the body is piped into the response, so it adds no
// stream hop (a Transform would also hold the first chunk back a tick, and an upstream failure
// right after it would turn a cut transfer into a different answer).
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { ByteBudget } from '../../infra/limits/byte-budget.ts';
import { FileRangeStream } from '../../infra/storage/file-read.ts';

/** Bytes counted before they are charged: a long transfer shows in the budget as it goes. */
const CHARGE_EVERY = 1024 * 1024;
/**
 * Bodies below this size are read whole and sent in one write (routes.ts); from it on they are
 * streamed with their writes coalesced. Upstream TLS hands over 16 KiB records,
 * several per socket read; written one by one that is a syscall per record (65 536 per GiB).
 * Corked until the event loop turns, the records of one read leave in one writev (strace on a
 * 256 MiB stream: 16 384 writes became 4 097 writevs and 724 writes).
 */
export const SMALL_BODY = 64 * 1024;

/** Arms `res` for the body Fastify is about to pipe into it; `budget` is null when budgets are off. */
export function meter(res: ServerResponse, budget: ByteBudget | null, ip: string): void {
  res.once('pipe', (body: Readable) => {
    let uncharged = 0;
    const count = (n: number) => {
      uncharged += n;
      if (uncharged >= CHARGE_EVERY && budget) {
        budget.charge(ip, uncharged);
        uncharged = 0;
        // Past the client's budget (byte-budget.ts CUT_MARGIN): the transfer is cut here, and the
        // client's next request gets 429 with Retry-After.
        if (budget.over(ip)) {
          body.destroy();
          res.destroy();
        }
      }
    };
    // A cached file copies into the response through reused buffers, in writes of its own size:
    // it reports its bytes, and a 'data' listener would undo the pooled copy.
    if (body instanceof FileRangeStream) {
      if (budget) body.onBytes = count;
    } else {
      let corked = false;
      const uncork = () => {
        corked = false;
        res.uncork();
      };
      body.on('data', (chunk: Buffer) => {
        if (!corked) {
          corked = true;
          res.cork();
          setImmediate(uncork);
        }
        if (budget) count(chunk.length);
      });
    }
    // The last charge of a transfer is made as its body ends, before the client can have the last
    // byte and ask again ('close' comes later, after the response finished; a next request handled
    // before it would not see the bytes), and on 'close' for a body that never ended.
    if (budget) {
      const last = () => {
        if (uncharged > 0) budget.charge(ip, uncharged);
        uncharged = 0;
        void budget.flush();
      };
      body.once('end', last);
      body.once('close', last);
    }
  });
}
