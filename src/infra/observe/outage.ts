// One warning per outage of a dependency, not one per request: a store that fails every call while
// it is down (Redis stopped, unreachable) would otherwise write a line for each request it serves.
// The first failure warns; the ones after it are only counted; the first success after an outage
// says once that it is over, how long it lasted and how many calls failed meanwhile.
import type { Logger } from 'pino';
import { briefError } from './logger.ts';

type Log = Pick<Logger, 'warn' | 'info'>;

export class Outage {
  private readonly log: Log;
  private readonly what: string;
  /** When the outage began (epoch ms); 0 while the dependency answers. */
  private since = 0;
  private failures = 0;

  /** `what` names the dependency in the line that ends an outage ("rate limit store"). */
  constructor(log: Log, what: string) {
    this.log = log;
    this.what = what;
  }

  /**
   * A failed call. The first of an outage is logged as `msg` with `fields` and the error, on `log`
   * when given (a request's logger, so the line carries its id); the others are counted.
   */
  failed(
    err: unknown,
    msg: string,
    fields: Record<string, unknown> = {},
    log: Pick<Logger, 'warn'> = this.log,
  ): void {
    this.failures++;
    if (this.since !== 0) return;
    this.since = Date.now();
    log.warn({ ...fields, err: briefError(err) }, msg);
  }

  /** A call that succeeded: ends the outage, if there was one, with one line. */
  ok(): void {
    if (this.since === 0) return;
    this.log.info(
      { dependency: this.what, failures: this.failures, downMs: Date.now() - this.since },
      `${this.what} answers again`,
    );
    this.since = 0;
    this.failures = 0;
  }
}
