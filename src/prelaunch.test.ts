// Prelaunched: a plugin takes its handle once and only for its own data directory; what nobody
// took is closed with the server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Prelaunched } from './prelaunch.ts';

function handle() {
  const h = { closed: 0, close: () => void h.closed++ };
  return h;
}

describe('Prelaunched', { timeout: 10_000 }, () => {
  it('hands a handle to the first taker for the same data directory, once', () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    assert.equal(p.take('plantuml', '/data'), h);
    assert.equal(p.take('plantuml', '/data'), undefined);
    assert.equal(h.closed, 0);
  });

  it('closes a handle started for another data directory instead of handing it over', () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    assert.equal(p.take('plantuml', '/other'), undefined);
    assert.equal(h.closed, 1);
  });

  it('closes what nobody took', async () => {
    const p = new Prelaunched();
    const h = handle();
    p.set('plantuml', h, '/data');
    await p.close();
    assert.equal(h.closed, 1);
    assert.equal(p.take('plantuml', '/data'), undefined);
  });
});
