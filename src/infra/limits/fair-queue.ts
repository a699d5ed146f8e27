// Bounded, fair admission to a shared set of slots (renders, upstream fetches). At most
// `concurrency` tasks run and at most `queueLength` wait; past that callers are refused at once, so
// memory stays flat under overload (the route answers 503 + Retry-After). One client (an address,
// IPv6 by /64: see addressGroup in client-ip.ts) holds at most `clientShare` of the slots and of the queue, and waiting
// clients are served round-robin, not first-come: a flood from one address leaves slots free for
// everyone else, and one queued request from a newcomer does not wait behind the flood's backlog.

/** The queue (or the caller's share of it) is full. */
export class QueueFull extends Error {
  /** `total`: the whole queue is full; `client`: this client's share is. */
  readonly scope: 'total' | 'client';
  constructor(scope: 'total' | 'client') {
    super(scope === 'total' ? 'queue full' : "queue full for this client's share");
    this.name = 'QueueFull';
    this.scope = scope;
  }
}

export interface QueueStats {
  running: number;
  queued: number;
  /** Clients running or waiting. */
  clients: number;
}

export interface FairQueueOptions {
  concurrency: number;
  queueLength: number;
  /**
   * Fraction in (0, 1] of the slots and of the queue one client may hold; 1 = no per-client cap
   * (round-robin still applies). At least one slot, and one queue place when there is a queue.
   */
  clientShare: number;
  onChange?(stats: QueueStats): void;
}

interface Client {
  running: number;
  waiting: (() => void)[];
}

export class FairQueue {
  readonly concurrency: number;
  readonly queueLength: number;
  /** Slots one client may hold at once. */
  readonly clientSlots: number;
  /** Queue places one client may hold. */
  readonly clientQueue: number;
  private running = 0;
  private queued = 0;
  private clients = new Map<string, Client>();
  /** Clients with waiters in round-robin order: a Map keeps insertion order, re-inserting moves to the back. */
  private ring = new Map<string, Client>();
  private readonly onChange?: (s: QueueStats) => void;

  constructor(o: FairQueueOptions) {
    if (!(o.clientShare > 0 && o.clientShare <= 1)) throw new RangeError('clientShare must be in (0, 1]');
    this.concurrency = Math.max(1, o.concurrency);
    this.queueLength = Math.max(0, o.queueLength);
    const part = (n: number) => (o.clientShare >= 1 ? n : Math.max(1, Math.floor(n * o.clientShare)));
    this.clientSlots = part(this.concurrency);
    this.clientQueue = this.queueLength === 0 ? 0 : part(this.queueLength);
    this.onChange = o.onChange;
  }

  get stats(): QueueStats {
    return { running: this.running, queued: this.queued, clients: this.clients.size };
  }

  /** Runs `task` in a slot under `client`'s share; throws QueueFull when it cannot even wait. */
  async run<T>(client: string, task: () => Promise<T>): Promise<T> {
    let c = this.clients.get(client);
    if (!c) {
      c = { running: 0, waiting: [] };
      this.clients.set(client, c);
    }
    // No eligible waiter ever coexists with a free slot (dispatch runs on every release), so a
    // caller that finds a free slot within its share is not jumping anyone's turn.
    if (this.running < this.concurrency && c.running < this.clientSlots) {
      this.running++;
      c.running++;
    } else {
      const scope =
        this.queued >= this.queueLength ? 'total' : c.waiting.length >= this.clientQueue ? 'client' : null;
      if (scope) {
        this.forget(client, c);
        throw new QueueFull(scope);
      }
      const mine = c;
      await new Promise<void>((resolve) => {
        mine.waiting.push(resolve);
        this.queued++;
        if (!this.ring.has(client)) this.ring.set(client, mine);
        this.onChange?.(this.stats);
      });
    }
    this.onChange?.(this.stats);
    try {
      return await task();
    } finally {
      this.running--;
      c.running--;
      this.dispatch();
      this.forget(client, c);
      this.onChange?.(this.stats);
    }
  }

  /** Hands free slots to waiting clients in turn, skipping those already at their share. */
  private dispatch(): void {
    while (this.running < this.concurrency && this.ring.size > 0) {
      let next: (() => void) | undefined;
      for (const [key, c] of this.ring) {
        if (c.running >= this.clientSlots) continue;
        next = c.waiting.shift();
        this.queued--;
        this.running++;
        c.running++;
        this.ring.delete(key);
        if (c.waiting.length > 0) this.ring.set(key, c);
        break;
      }
      if (!next) return;
      next();
    }
  }

  private forget(key: string, c: Client): void {
    if (c.running === 0 && c.waiting.length === 0) this.clients.delete(key);
  }
}
