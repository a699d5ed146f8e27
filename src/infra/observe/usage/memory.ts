// The usage sink of a single instance: minute buckets for the last hour and quarter-hour buckets for
// the last day, in memory. Every bucket holds bounded top-N tables, so the whole store stays bounded.
import {
  Bucket,
  type Gauges,
  QUARTER_MS,
  type UsageSink,
  WINDOWS,
  type WindowName,
  type WindowRead,
} from './usage.ts';

export class MemorySink implements UsageSink {
  readonly shared = false;
  private minutes = new Map<number, Bucket>();
  private quarters = new Map<number, Bucket>();
  private gauges: Gauges | null = null;
  private readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  async add(buckets: Bucket[], gauges: Gauges | null, now: number): Promise<void> {
    for (const b of buckets) {
      this.into(this.minutes, b.start, b);
      this.into(this.quarters, b.start - (b.start % QUARTER_MS), b);
    }
    if (gauges) this.gauges = gauges;
    this.prune(now);
  }

  private into(ring: Map<number, Bucket>, start: number, b: Bucket): void {
    let slot = ring.get(start);
    if (!slot) {
      slot = new Bucket(start, this.capacity);
      ring.set(start, slot);
    }
    slot.merge(b);
  }

  private prune(now: number): void {
    for (const [ring, w] of [
      [this.minutes, WINDOWS.hour],
      [this.quarters, WINDOWS.day],
    ] as const) {
      for (const start of ring.keys()) if (start <= now - w.spanMs - w.stepMs) ring.delete(start);
    }
  }

  async read(window: WindowName, now: number): Promise<WindowRead> {
    this.prune(now);
    const ring = window === 'hour' ? this.minutes : this.quarters;
    return {
      buckets: slots(window, now).map((start) => ring.get(start) ?? new Bucket(start, 1)),
      gauges: this.gauges ? [this.gauges] : [],
    };
  }
}

/** The bucket starts of a window ending now, oldest first (the last one is the current, partial step). */
export function slots(window: WindowName, now: number): number[] {
  const { spanMs, stepMs } = WINDOWS[window];
  const last = now - (now % stepMs);
  const n = spanMs / stepMs;
  return Array.from({ length: n }, (_, i) => last - (n - 1 - i) * stepMs);
}
