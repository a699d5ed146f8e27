// Route implementations loaded on their route's first request: a utility registers its routes
// (URLs, schemas, hooks: what /docs and validation read) at start from small route files, and the
// modules that answer them (and their dependencies) are imported only when a request needs them.
// Most routes of a server, and nearly all of a test's, are never asked; loading every utility's
// code was over half of start-up. One import per implementation however many requests arrive
// together; a failed import is not kept: that request gets a 503 in its route's envelope and the
// next one tries again.
import type { FastifyReply } from 'fastify';
import { SingleFlight } from '../cache/single-flight.ts';
import { unavailable } from './errors.ts';

export interface LazyImpl<T> {
  /** The implementation, loaded by the first call; a failed load throws a 503 AppError (retried next call). */
  get(): Promise<T>;
  /**
   * A route handler that answers with `pick(impl)` once the implementation is loaded. For async
   * handlers (the returned promise is what Fastify awaits).
   */
  handler<Req, R>(
    pick: (impl: T) => (req: Req, reply: FastifyReply) => R,
  ): (req: Req, reply: FastifyReply) => Promise<R>;
  /** Whether the implementation is loaded (for tests and probes). */
  readonly loaded: boolean;
  /**
   * The implementation if it is loaded, else undefined; never starts a load. For what must not
   * load it: a gauge read at scrape time reports the unloaded state (nothing running) instead.
   */
  readonly value: T | undefined;
  /**
   * For onClose: the implementation once a load already under way ends, undefined when none was
   * asked for or it failed; never starts one. What a late first request built is closed too.
   */
  settled(): Promise<T | undefined>;
}

/**
 * `what` names the implementation in the error a failed load answers ("tus uploads"); `load` imports
 * its modules (literal `import('./x.ts')`, so compiled copies rename them) and builds what the
 * handlers share.
 */
export function lazyImpl<T>(what: string, load: () => Promise<T>): LazyImpl<T> {
  let value: T | undefined;
  // Callers while the import runs share it (single-flight); a failure is not kept.
  const flight = new SingleFlight<T>();
  const get = async (): Promise<T> => {
    if (value !== undefined) return value;
    try {
      // Kept inside the run, so no moment passes between the run's end and the value being there.
      return await flight.run('', async () => {
        value = await load();
        return value;
      });
    } catch (err) {
      throw unavailable(`${what} could not be loaded on this server; try again`, 1, 'NOT_LOADED', {
        cause: err,
      });
    }
  };
  return {
    get,
    handler: (pick) => async (req, reply) => pick(value ?? (await get()))(req, reply),
    get loaded() {
      return value !== undefined;
    },
    get value() {
      return value;
    },
    settled: async () =>
      value ??
      flight.running('')?.then(
        (v) => v,
        () => undefined,
      ),
  };
}
