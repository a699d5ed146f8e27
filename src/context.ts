// What every service plugin receives: config, public URLs, shared limiter, metrics, readiness
// checks, the optional Redis connection and the broadcast bus on it, the absolute data directory,
// the service definitions, each utility's own per-server state and the usage recorder.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Drain } from './infra/http/drain.ts';
import type { PublicUrls } from './infra/http/hosts.ts';
import type { ConnectionBudget } from './infra/limits/conn-budget.ts';
import type { RateLimiter } from './infra/limits/rate-limit.ts';
import type { Metrics } from './infra/observe/metrics.ts';
import type { Subjects, UsageRecorder } from './infra/observe/usage/usage.ts';
import type { Broadcast } from './infra/state/broadcast.ts';
import type { SharedState } from './infra/state/state.ts';
import type { BlobStore } from './infra/storage/blob-store.ts';
import type { Prelaunched } from './prelaunch.ts';
import type { LocalKey, ServiceDef } from './services/define.ts';

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

export interface ServiceContext {
  config: Config;
  urls: PublicUrls;
  limiter: RateLimiter;
  metrics: Metrics;
  /** The process's connection budget; every listener admits its sockets through it. */
  connections: ConnectionBudget;
  readiness: Readiness;
  /** Set on SIGTERM: /readyz answers 503 and every answer closes its connection (main.ts). */
  drain: Drain;
  redis: Redis | null;
  /** Counters, flags, leases and reservation pools every limit is built on (Redis when configured). */
  state: SharedState;
  /** Messages to every instance (Redis pub/sub; this process alone without Redis). */
  broadcast: Broadcast;
  /** Absolute path of the data directory (created at start-up). */
  dataDir: string;
  /** The shared blob store (fs or S3, config.storage.backend); namespace keys: "files/..", "avatars/..". */
  blobs: BlobStore;
  logger: Logger;
  /** Wall-clock time in epoch ms for rules that span days (file lifetimes); tests pass their own. */
  now: () => number;
  /** The package version, e.g. 0.1.0. */
  version: string;
  /** Every utility definition this server was built with, enabled or not (services/index.ts). */
  services: readonly ServiceDef[];
  /** What the utilities' prelaunches started before the server was built; each plugin takes its own. */
  prelaunched: Prelaunched;
  /** A utility's per-server state (services/define.ts LocalKey), made on first use. */
  local<T>(key: LocalKey<T>): T;
  /** Usage counts for the admin dashboard; null when it is off (no admin token), so nothing is counted. */
  usage: UsageRecorder | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: ServiceContext;
  }
  interface FastifyRequest {
    /** The caller's address after the trusted-proxy walk (infra/http/client-ip.ts). */
    clientIp: string;
    /** The key every limit counts this caller under: clientIp, or its IPv6 network (addressGroup). */
    clientKey: string;
    /** What a proxied request was for, counted by the usage recorder (null elsewhere). */
    usageSubjects: Subjects | null;
  }
  interface FastifyContextConfig {
    svc?: string;
  }
}
