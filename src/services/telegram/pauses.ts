// Pause-until marks from Telegram's 429 retry_after: while a chat is
// paused the relay answers 429 itself, because ignoring retry_after escalates it and can get the bot
// restricted. One TTL flag per chat on the shared state, so every instance honours the same pause.
import type { SharedState } from '../../infra/state/state.ts';

export class Pauses {
  private readonly state: SharedState;
  constructor(state: SharedState) {
    this.state = state;
  }

  /** Milliseconds left on the pause of `id`, 0 when not paused. */
  async remaining(id: string): Promise<number> {
    return Math.max(0, (await this.state.flag(`tg-pause:${id}`))?.ttlMs ?? 0);
  }

  async pause(id: string, ms: number): Promise<void> {
    if (ms > 0) await this.state.setFlag(`tg-pause:${id}`, ms);
  }
}
