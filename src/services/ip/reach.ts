// /rest/api/v1/ip/reach: does the outside world this instance proxies answer from here, and how
// fast (MyIP's most used check, for the server's own path). Every target is asked at once with one
// deadline; one round at a time serves every caller that asks meanwhile, and its result is reused
// for a few seconds, so a crowd of callers costs a handful of outbound requests, not one each.
import { SingleFlight } from '../../infra/cache/single-flight.ts';
import { type Egress, isBlocked, undiciCode } from '../../infra/egress/client.ts';

export interface TargetResult {
  /** The target's host name. */
  name: string;
  url: string;
  /** An HTTP answer below 500 came back in time. */
  reachable: boolean;
  /** The HTTP status, null when none came. */
  status: number | null;
  /** Milliseconds from the start of the round to the answer's headers (or to the failure). */
  ms: number;
  /** Why it is not reachable, in words; null when it is. */
  error: string | null;
}

export interface ReachReport {
  /** When the round started (ISO 8601). */
  checkedAt: string;
  timeoutMs: number;
  targets: TargetResult[];
}

export interface ReachOptions {
  targets: readonly string[];
  timeoutMs: number;
  /** How long a finished round is served to later callers. */
  reuseMs: number;
  userAgent: string;
}

/** The reason a request failed, for people: never a stack, never the raw addresses dialled. */
export function describeFailure(err: unknown, timeoutMs: number): string {
  if (isBlocked(err)) return 'resolves to a non-public address';
  const code = undiciCode(err) ?? (err as { code?: unknown } | null)?.code;
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  const c = typeof code === 'string' ? code : typeof cause === 'string' ? cause : '';
  if (c === 'ENOTFOUND' || c === 'EAI_AGAIN') return 'the name does not resolve';
  if (c === 'ECONNREFUSED') return 'connection refused';
  if (c === 'ECONNRESET' || c === 'UND_ERR_SOCKET') return 'connection reset';
  if (c === 'ENETUNREACH' || c === 'EHOSTUNREACH') return 'network unreachable';
  if (/CERT|SELF_SIGNED|TLS|SSL/i.test(c)) return `TLS failed (${c})`;
  if (
    c === 'UND_ERR_CONNECT_TIMEOUT' ||
    c === 'UND_ERR_HEADERS_TIMEOUT' ||
    (err as Error)?.name === 'TimeoutError'
  )
    return `no answer within ${timeoutMs} ms`;
  if (c === 'UND_ERR_ABORTED') return `no answer within ${timeoutMs} ms`;
  return c ? `failed (${c})` : 'failed';
}

export class Reach {
  private readonly flight = new SingleFlight<ReachReport>();
  private last: { at: number; report: ReachReport } | null = null;
  private readonly http: Egress;
  private readonly o: ReachOptions;

  constructor(http: Egress, o: ReachOptions) {
    this.http = http;
    this.o = o;
  }

  /** The latest round if it is recent enough, else a new one (shared with concurrent callers). */
  check(now = Date.now()): Promise<ReachReport> {
    if (this.last && now - this.last.at < this.o.reuseMs) return Promise.resolve(this.last.report);
    return this.flight.run('reach', async () => {
      const report = await this.round();
      this.last = { at: Date.now(), report };
      return report;
    });
  }

  private async round(): Promise<ReachReport> {
    const started = process.hrtime.bigint();
    const checkedAt = new Date().toISOString();
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
    const targets = await Promise.all(
      this.o.targets.map(async (target): Promise<TargetResult> => {
        const url = new URL(target);
        const base = { name: url.hostname, url: url.href };
        try {
          const res = await this.http.request({
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: 'GET',
            headers: { 'user-agent': this.o.userAgent, accept: '*/*' },
            signal,
          });
          const ms = elapsed();
          // The answer is what counts, not the page: at most a little of it is read, then dropped.
          res.body.on('error', () => {});
          await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
          const ok = res.statusCode < 500;
          return {
            ...base,
            reachable: ok,
            status: res.statusCode,
            ms,
            error: ok ? null : `answered ${res.statusCode}`,
          };
        } catch (err) {
          return {
            ...base,
            reachable: false,
            status: null,
            ms: elapsed(),
            error: describeFailure(err, this.o.timeoutMs),
          };
        }
      }),
    );
    return { checkedAt, timeoutMs: this.o.timeoutMs, targets };
  }
}
