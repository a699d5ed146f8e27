// Max-Downloads counts on the shared state, per file version (`<key>:<life-id>`):
//   dl:<id>:n          downloads started, never past Max-Downloads (a take past it is refused)
//   dl:<id>:done       downloads that sent the file's final byte
//   dl:<id>:c:<client> flag: when this client key started a counted download (its continuations are served)
//   dl:<id>:last       flag: when the last allowed download started (the resume grace runs from there)
// A deleted version's count is closed (set past any limit) for a while rather than removed.
// Flags hold their start time by the files clock (ctx.now) and live at least the grace.
// Every instance on one Redis shares them, so N parallel GETs on several nodes count exactly N.
import type { SharedState } from '../../infra/state/state.ts';

/** What a closed count holds: past any Max-Downloads limit (and well inside a safe integer). */
const CLOSED = 2 ** 40;

export interface DownloadState {
  /** Downloads started so far. */
  count: number;
  /** Downloads that sent their final byte. */
  done: number;
  /** The resume grace of the last allowed download is still running. */
  inGrace: boolean;
}

export class DownloadCounter {
  private readonly state: SharedState;
  private readonly graceMs: number;
  constructor(state: SharedState, graceMs: number) {
    this.state = state;
    this.graceMs = graceMs;
  }

  private within(f: { value: string } | null, now: number): boolean {
    return f !== null && now - Number(f.value) <= this.graceMs;
  }

  /**
   * Takes one of `max` downloads of `id` for `client` at `now`: the new count, or null when none is
   * left (nothing changes then). The counters are forgotten after `lifeMs` if given (the file's end).
   */
  async take(
    id: string,
    max: number,
    client: string,
    now: number,
    lifeMs: number | null,
  ): Promise<number | null> {
    const r = await this.state.count(`dl:${id}:n`, 1, {
      max,
      ...(lifeMs ? { ttlMs: Math.max(1, lifeMs) } : {}),
    });
    if (!r.ok) return null;
    // Flags outlive the grace a little: the files clock decides (a test clock may run ahead).
    const life = this.graceMs + 60_000;
    await this.state.setFlag(`dl:${id}:c:${client}`, life, String(now));
    if (r.value >= max) await this.state.setFlag(`dl:${id}:last`, life, String(now));
    return r.value;
  }

  /** Whether `client` started a counted download of `id` within the grace (a continuation is its). */
  async holds(id: string, client: string, now: number): Promise<boolean> {
    return this.within(await this.state.flag(`dl:${id}:c:${client}`), now);
  }

  async peek(id: string, now: number): Promise<DownloadState> {
    const [[count = 0, done = 0], last] = await Promise.all([
      this.state.counters([`dl:${id}:n`, `dl:${id}:done`]),
      this.state.flag(`dl:${id}:last`),
    ]);
    return { count, done, inGrace: this.within(last, now) };
  }

  /** A download sent the final byte; resolves with how many did. */
  async finished(id: string, lifeMs: number | null): Promise<number> {
    return (await this.state.count(`dl:${id}:done`, 1, lifeMs ? { ttlMs: Math.max(1, lifeMs) } : {})).value;
  }

  /**
   * The file version `id` is gone (used up, expired, deleted or replaced): its count is closed, so
   * no take succeeds, for the grace and ten minutes more, and then it goes. Removing it at once would
   * reopen the count to a request that found the file just before the delete and asks after it: one
   * that had opened the bytes already would be served past Max-Downloads.
   */
  async close(id: string): Promise<void> {
    await this.state.count(`dl:${id}:n`, CLOSED, { expireAt: Date.now() + this.graceMs + 600_000 });
    await this.state.forget([`dl:${id}:done`]);
  }
}
