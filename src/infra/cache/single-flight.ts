// One in-flight computation per key: callers that ask for a key already being computed wait for
// that run and share its result (a burst for one new diagram, image or avatar costs one render or
// one upstream fetch). Nothing is kept once the run settles, so a failure is not cached: the next
// caller starts afresh. A waiter may bound its wait; the run itself goes on for the others.

/** A waiter gave up after `waitMs`; the computation it waited for is still running. */
export class FlightTimeout extends Error {
  constructor(ms: number) {
    super(`gave up waiting for a shared computation after ${ms} ms`);
    this.name = 'FlightTimeout';
  }
}

export interface FlightOptions {
  /** How long a caller that joins a running computation waits for it (the starter always waits). */
  waitMs?: number;
}

export class SingleFlight<V> {
  private flights = new Map<string, Promise<V>>();

  /** Computations running now. */
  get size(): number {
    return this.flights.size;
  }

  /** The running computation for `key`, if any. */
  running(key: string): Promise<V> | undefined {
    return this.flights.get(key);
  }

  /** `fn()` for the first caller of `key`; every caller until it settles gets the same result. */
  run(key: string, fn: () => Promise<V>, o: FlightOptions = {}): Promise<V> {
    const running = this.flights.get(key);
    if (running) return o.waitMs === undefined ? running : bounded(running, o.waitMs);
    // The async wrapper turns a synchronous throw into a rejection, so the key is always released.
    const p = (async () => fn())().finally(() => this.flights.delete(key));
    this.flights.set(key, p);
    return p;
  }
}

function bounded<V>(p: Promise<V>, ms: number): Promise<V> {
  return new Promise<V>((resolve, reject) => {
    const timer = setTimeout(() => reject(new FlightTimeout(ms)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
