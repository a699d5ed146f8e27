// Who and what goes to the quarantine lane of a render pool: a source whose render timed out or ran
// out of memory (re-sending a runaway input is the attack), and a client after its second such
// render within the window (one input that was slow on a busy machine must not move all of a user's
// work). Suspects are served by a separate, low-priority worker with a small share, so re-sending
// a bomb costs the other clients one deadline, once, instead of a main slot every time. One
// registry serves every engine of a utility: a client that bombed one engine is a suspect for all.
import { createHash } from 'node:crypto';
import { ByteLru } from '../cache/lru.ts';

export interface SuspectsOptions {
  /** How long a suspect stays one (ms); 0 turns quarantine off. */
  windowMs: number;
  /** Suspects remembered at most (the oldest are forgotten first). */
  max?: number;
  now?: () => number;
}

export class Suspects {
  private readonly lru: ByteLru<number>;
  private readonly o: SuspectsOptions;
  private readonly now: () => number;

  constructor(o: SuspectsOptions) {
    this.o = o;
    this.now = o.now ?? Date.now;
    this.lru = new ByteLru<number>(o.max ?? 10_000, () => 1);
  }

  get enabled(): boolean {
    return this.o.windowMs > 0;
  }

  /** The key a source is remembered by (a hash: the registry never holds a diagram). */
  static sourceKey(source: string): string {
    return `source:${createHash('sha256').update(source).digest('base64')}`;
  }

  /**
   * Whether `client` (its address group) or the source (its `sourceKey`, asked for only while
   * there are suspects at all) is a suspect now.
   */
  suspect(client: string, source: () => string): boolean {
    if (!this.enabled || this.lru.size === 0) return false;
    return this.current(client) || this.current(source());
  }

  /** A render of `source` for `client` timed out or ran out of memory. */
  strike(client: string, source: string): void {
    if (!this.enabled) return;
    const until = this.now() + this.o.windowMs;
    if (source) this.lru.set(source, until);
    // The server's own work (client '') is not a suspect; its source still is.
    if (!client) return;
    const first = `strike:${client}`;
    if (this.current(first)) this.lru.set(client, until);
    else this.lru.set(first, until);
  }

  private current(key: string): boolean {
    const until = key ? this.lru.get(key) : undefined;
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.lru.delete(key);
    return false;
  }
}
