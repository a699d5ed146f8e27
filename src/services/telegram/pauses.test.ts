// MemoryPauses: answers the time left, forgets expired marks, and never grows past its bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryPauses } from './pauses.ts';

describe('MemoryPauses', () => {
  it('reports the time left on a pause and nothing for other ids', async () => {
    const p = new MemoryPauses();
    await p.pause('a', 5000);
    const left = await p.remaining('a');
    assert.ok(left > 0 && left <= 5000);
    assert.equal(await p.remaining('b'), 0);
  });

  it('treats an elapsed pause as none and drops it', async () => {
    const p = new MemoryPauses();
    await p.pause('a', -1);
    assert.equal(await p.remaining('a'), 0);
    assert.equal(p.size, 0);
  });

  it('stays within its bound under many chats, dropping the oldest live mark', async () => {
    const p = new MemoryPauses(100);
    for (let i = 0; i < 1000; i++) await p.pause(`chat${i}`, 60_000);
    assert.equal(p.size, 100);
    assert.equal(await p.remaining('chat0'), 0);
    assert.ok((await p.remaining('chat999')) > 0);
  });
});
