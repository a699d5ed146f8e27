// Usage counts for the operator's dashboard: requests, bytes and errors per utility, and bounded
// top-N tables (clients, proxied repositories, packages, files) in time buckets. The request hook
// adds to one live bucket (a few map and heap updates); every flush hands it to the sink on the shared state
// (sink.ts: this process, or Redis shared by every instance). Probes add what is not
// per request: cache hits, relay bytes (deltas of cumulative counters) and queue depths (gauges).
import type { Logger } from 'pino';
import { TopK } from '../top-k.ts';

export const MINUTE_MS = 60_000;
export const QUARTER_MS = 15 * MINUTE_MS;

/** The dashboard's windows: the last hour in minutes, the last day in quarter hours. */
export const WINDOWS = {
  hour: { spanMs: 3_600_000, stepMs: MINUTE_MS },
  day: { spanMs: 86_400_000, stepMs: QUARTER_MS },
} as const;
export type WindowName = keyof typeof WINDOWS;

export const TOP_KINDS = ['clientBytes', 'clientRequests', 'repo', 'package', 'file'] as const;
export type TopKind = (typeof TOP_KINDS)[number];

/** What a proxied request was for (services/proxy/subjects.ts). */
export interface Subjects {
  repo?: string | undefined;
  package?: string | undefined;
  file?: string | undefined;
}

export interface UtilityCounts {
  requests: number;
  errors: number;
  bytesIn: number;
  bytesOut: number;
}

/** Keys from clients (paths, addresses) are cut to this length: memory is bounded per entry too. */
const MAX_KEY = 200;
const cut = (s: string) => (s.length > MAX_KEY ? s.slice(0, MAX_KEY) : s);

export class Bucket {
  readonly start: number;
  readonly utilities = new Map<string, UtilityCounts>();
  /** Other counters added by probes: `cache:<name>:hit`, `relay:bytes`... */
  readonly counters = new Map<string, number>();
  readonly tops: Record<TopKind, TopK>;

  constructor(start: number, capacity: number) {
    this.start = start;
    this.tops = {
      clientBytes: new TopK(capacity),
      clientRequests: new TopK(capacity),
      repo: new TopK(capacity),
      package: new TopK(capacity),
      file: new TopK(capacity),
    };
  }

  utility(svc: string): UtilityCounts {
    let u = this.utilities.get(svc);
    if (!u) {
      u = { requests: 0, errors: 0, bytesIn: 0, bytesOut: 0 };
      this.utilities.set(svc, u);
    }
    return u;
  }

  addCounter(name: string, n: number): void {
    if (n) this.counters.set(name, (this.counters.get(name) ?? 0) + n);
  }

  /** Adds another bucket's counts (a later flush of the same minute, or a minute into its quarter). */
  merge(other: Bucket): void {
    for (const [svc, o] of other.utilities) {
      const u = this.utility(svc);
      u.requests += o.requests;
      u.errors += o.errors;
      u.bytesIn += o.bytesIn;
      u.bytesOut += o.bytesOut;
    }
    for (const [k, n] of other.counters) this.addCounter(k, n);
    for (const kind of TOP_KINDS) this.tops[kind].merge(other.tops[kind].entries());
  }

  get empty(): boolean {
    return this.utilities.size === 0 && this.counters.size === 0;
  }
}

/** One instance's current figures (queue depths, open relay sessions), summed over the fleet. */
export type Gauges = Record<string, number>;

export interface WindowRead {
  /** One bucket per step of the window, oldest first (empty where nothing happened). */
  buckets: Bucket[];
  /** The latest gauges of every live instance. */
  gauges: Gauges[];
}

export interface UsageSink {
  /** Takes flushed buckets (partial minutes; the same start may come again) and this instance's gauges. */
  add(buckets: Bucket[], gauges: Gauges | null, now: number): Promise<void>;
  read(window: WindowName, now: number): Promise<WindowRead>;
  readonly shared: boolean;
}

export interface Probes {
  /** Cumulative counters (hits since start...): their growth between flushes is counted. */
  counters?: () => Promise<Record<string, number>> | Record<string, number>;
  gauges?: () => Promise<Gauges> | Gauges;
}

export interface UsageOptions {
  sink: UsageSink;
  /** Keys each top-N table keeps per bucket. */
  capacity: number;
  flushMs: number;
  logger: Logger;
  now?: () => number;
}

export class UsageRecorder {
  readonly capacity: number;
  readonly sink: UsageSink;
  private live: Bucket;
  private liveEnd: number;
  /** Closed minutes not yet flushed (the live bucket rolled over between two flushes). */
  private closed: Bucket[] = [];
  private probes: Probes = {};
  private lastCounters = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private failing = false;
  private readonly now: () => number;
  private readonly logger: Logger;

  constructor(o: UsageOptions) {
    this.sink = o.sink;
    this.capacity = o.capacity;
    this.now = o.now ?? Date.now;
    this.logger = o.logger;
    const t = this.now();
    this.live = new Bucket(t - (t % MINUTE_MS), this.capacity);
    this.liveEnd = this.live.start + MINUTE_MS;
    if (o.flushMs > 0) {
      this.timer = setInterval(() => void this.flush(), o.flushMs);
      this.timer.unref();
    }
  }

  setProbes(p: Probes): void {
    this.probes = p;
  }

  /** Counts one answered request; the hot path (every request of every utility). */
  record(
    svc: string,
    client: string,
    status: number,
    bytesIn: number,
    bytesOut: number,
    subjects?: Subjects | null,
  ): void {
    const t = this.now();
    if (t >= this.liveEnd || t < this.live.start) this.roll(t);
    const b = this.live;
    const u = b.utility(svc);
    u.requests++;
    if (status >= 400) u.errors++;
    u.bytesIn += bytesIn;
    u.bytesOut += bytesOut;
    const bytes = bytesIn + bytesOut;
    if (client) {
      const c = cut(client);
      b.tops.clientBytes.add(c, bytes);
      b.tops.clientRequests.add(c, 1);
    }
    // The proxied tables rank what was served: a refused or failed request (a package off the
    // allow-list, an upstream 404 or 502) is counted as an error above, never as a package's traffic.
    if (subjects && status < 400) {
      if (subjects.repo) b.tops.repo.add(cut(subjects.repo), bytes);
      if (subjects.package) b.tops.package.add(cut(subjects.package), bytes);
      if (subjects.file) b.tops.file.add(cut(subjects.file), bytes);
    }
  }

  private roll(t: number): void {
    if (!this.live.empty) this.closed.push(this.live);
    this.live = new Bucket(t - (t % MINUTE_MS), this.capacity);
    this.liveEnd = this.live.start + MINUTE_MS;
  }

  /** Hands everything counted so far to the sink (one flush at a time; a second call waits for it). */
  flush(): Promise<void> {
    this.flushing ??= this.doFlush().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async doFlush(): Promise<void> {
    const now = this.now();
    let gauges: Gauges | null = null;
    let counters: Record<string, number> = {};
    try {
      [counters, gauges] = await Promise.all([
        this.probes.counters?.() ?? {},
        this.probes.gauges?.() ?? null,
      ]);
    } catch (err) {
      this.logger.warn({ err }, 'usage probes failed');
    }
    if (now >= this.liveEnd || now < this.live.start) this.roll(now);
    for (const [k, v] of Object.entries(counters)) {
      const last = this.lastCounters.get(k) ?? 0;
      // A counter that went down was reset (a restarted relay): all of it is new.
      this.live.addCounter(k, v >= last ? v - last : v);
      this.lastCounters.set(k, v);
    }
    const out = [...this.closed, this.live];
    this.closed = [];
    this.live = new Bucket(this.live.start, this.capacity);
    try {
      await this.sink.add(
        out.filter((b) => !b.empty),
        gauges,
        now,
      );
      if (this.failing) this.logger.info('usage counters flushed again');
      this.failing = false;
    } catch (err) {
      // Dropped, not retried: a half-applied batch sent again would count twice. Logged once per outage.
      if (!this.failing) this.logger.warn({ err }, 'usage counters could not be flushed; dropped');
      this.failing = true;
    }
  }

  /** Flushes, then reads the window from the sink (the whole fleet when it is shared). */
  async read(window: WindowName): Promise<WindowRead> {
    await this.flush();
    return this.sink.read(window, this.now());
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

/** Bytes a request moved on its socket since the previous request on it (keep-alive reuses sockets). */
const SEEN_IN = Symbol('usage.bytesRead');
const SEEN_OUT = Symbol('usage.bytesWritten');
interface CountedSocket {
  bytesRead?: number;
  bytesWritten?: number;
  [SEEN_IN]?: number;
  [SEEN_OUT]?: number;
}

export function socketBytes(socket: CountedSocket | null | undefined): { bytesIn: number; bytesOut: number } {
  // Each getter read once: net.Socket's bytesWritten walks (and copies) its write buffer.
  const r = socket?.bytesRead;
  const w = socket?.bytesWritten;
  if (!socket || typeof w !== 'number' || typeof r !== 'number') return { bytesIn: 0, bytesOut: 0 };
  const bytesIn = r - (socket[SEEN_IN] ?? 0);
  const bytesOut = w - (socket[SEEN_OUT] ?? 0);
  socket[SEEN_IN] = r;
  socket[SEEN_OUT] = w;
  return { bytesIn: Math.max(0, bytesIn), bytesOut: Math.max(0, bytesOut) };
}
