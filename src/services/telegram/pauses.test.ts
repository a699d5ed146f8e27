// Telegram pauses on the shared state: the time left, nothing for other chats, an elapsed pause is none.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryState } from '../../infra/state/memory.ts';
import { Pauses } from './pauses.ts';

describe('telegram pauses', () => {
  it('reports the time left on a pause and nothing for other ids', async () => {
    const p = new Pauses(new MemoryState());
    await p.pause('a', 5000);
    const left = await p.remaining('a');
    assert.ok(left > 0 && left <= 5000);
    assert.equal(await p.remaining('b'), 0);
  });

  it('treats an elapsed or empty pause as none', async () => {
    const p = new Pauses(new MemoryState());
    await p.pause('a', -1);
    assert.equal(await p.remaining('a'), 0);
    await p.pause('b', 30);
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(await p.remaining('b'), 0);
  });
});
