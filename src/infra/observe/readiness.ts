// Named dependency checks behind /readyz and the report they make (see Readiness).
export interface ReadyResult {
  ok: boolean;
  detail?: string;
}

type Check = () => Promise<ReadyResult> | ReadyResult;

/** What /readyz reports: each dependency with the utilities it degrades, and the verdict. */
export interface ReadyReport {
  /** ready: all serving; degraded: some utilities cannot serve fully; not ready: none can. */
  status: 'ready' | 'degraded' | 'not ready';
  checks: Record<string, ReadyResult & { affects: string[] }>;
  /** The utilities a failing check degrades, sorted. */
  degraded: string[];
  /** When the checks ran (they run at most once a second, whatever asks). */
  checkedAt: string;
}

/** `affects: 'all'`: every enabled utility (e.g. Redis when rate limits fail closed). */
export type Affects = readonly string[] | 'all';

/**
 * Named dependency checks behind /readyz. A failing check marks the utilities it names degraded,
 * never the node dead by itself: Redis and S3 are shared by every node, so taking one node out of
 * rotation for them helps nothing and takes the fleet down with them. The node is "not ready"
 * only when every enabled utility is degraded. Results are kept for a second and refreshed in the
 * background, so /readyz answers at once however slow a dependency is (a balancer's health check
 * with a 2 s timeout must not mark a healthy node down because S3 is slow).
 */
export class Readiness {
  private checks = new Map<string, { check: Check; affects: Affects }>();
  private last: { at: number; report: ReadyReport } | null = null;
  private inflight: Promise<ReadyReport> | null = null;
  private readonly maxAgeMs: number;
  private readonly timeoutMs: number;

  constructor(o: { maxAgeMs?: number; timeoutMs?: number } = {}) {
    this.maxAgeMs = o.maxAgeMs ?? 1000;
    this.timeoutMs = o.timeoutMs ?? 2000;
  }

  /** `affects`: the utilities that cannot serve fully while this check fails. */
  add(name: string, check: Check, affects: Affects): void {
    this.checks.set(name, { check, affects });
    this.last = null;
  }

  /**
   * The latest report for a node serving `enabled` utilities: fresh if the last one is older than
   * a second and none is running (only the first call waits for the checks), else the last one.
   */
  async report(enabled: readonly string[]): Promise<ReadyReport> {
    const last = this.last;
    if (last && Date.now() - last.at < this.maxAgeMs) return last.report;
    this.inflight ??= this.run(enabled).then(
      (report) => {
        this.last = { at: Date.now(), report };
        this.inflight = null;
        return report;
      },
      (err: unknown) => {
        this.inflight = null;
        throw err;
      },
    );
    return last ? last.report : this.inflight;
  }

  /** Runs every check now (each bounded by the timeout) and judges the node. */
  async run(enabled: readonly string[]): Promise<ReadyReport> {
    const timeoutMs = this.timeoutMs;
    const entries = [...this.checks.entries()];
    const results = await Promise.all(
      entries.map(async ([, { check }]): Promise<ReadyResult> => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const timeout = new Promise<ReadyResult>((resolve) => {
            timer = setTimeout(
              () => resolve({ ok: false, detail: `no answer within ${timeoutMs}ms` }),
              timeoutMs,
            );
          });
          return await Promise.race([Promise.resolve(check()), timeout]);
        } catch (err) {
          return { ok: false, detail: err instanceof Error ? err.message : String(err) };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const checks: ReadyReport['checks'] = {};
    const degraded = new Set<string>();
    entries.forEach(([name, { affects }], i) => {
      const r = results[i] as ReadyResult;
      const names = affects === 'all' ? [...enabled] : affects.filter((a) => enabled.includes(a));
      checks[name] = { ...r, affects: names };
      if (!r.ok) for (const n of names) degraded.add(n);
    });
    const status =
      degraded.size === 0 ? 'ready' : enabled.every((e) => degraded.has(e)) ? 'not ready' : 'degraded';
    return { status, checks, degraded: [...degraded].sort(), checkedAt: new Date().toISOString() };
  }
}
