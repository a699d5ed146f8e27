// Byte-rate limits for the pipe (docs/protocols/syncthing-relay.md §8): token buckets with rate N bytes/s
// and burst 2N, as in strelaysrv's -global-rate and -per-session-rate. Unlike strelaysrv 1.19.2, each
// session owns its own bucket (its two directions share it).

export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly burst: number;

  private readonly rate: number;
  private readonly now: () => number;
  constructor(rate: number, now: () => number = () => performance.now()) {
    this.rate = rate;
    this.now = now;
    this.burst = rate * 2;
    this.tokens = this.burst;
    this.last = this.now();
  }

  /**
   * Charges n bytes and returns how many ms the caller must wait before writing them. Going into
   * debt instead of splitting chunks keeps the long-run rate exact with one timer per chunk.
   */
  take(n: number): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.rate) / 1000);
    this.last = t;
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.rate;
  }
}

/** The buckets one chunk is charged to; 0-rate limits are simply absent. */
export class RateLimits {
  readonly global: TokenBucket | null;

  private readonly perSessionRate: number;
  constructor(globalRate: number, perSessionRate: number) {
    this.perSessionRate = perSessionRate;
    this.global = globalRate > 0 ? new TokenBucket(globalRate) : null;
  }

  sessionBucket(): TokenBucket | null {
    return this.perSessionRate > 0 ? new TokenBucket(this.perSessionRate) : null;
  }

  /** ms to wait before forwarding n bytes of a session with bucket `own` (longest of the two). */
  delay(n: number, own: TokenBucket | null): number {
    const a = own ? own.take(n) : 0;
    const b = this.global ? this.global.take(n) : 0;
    return Math.max(a, b);
  }
}
