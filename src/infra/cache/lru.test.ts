import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteLru } from './lru.ts';

describe('ByteLru', () => {
  const lru = () => new ByteLru<Buffer>(100, (b) => b.length, 40);

  it('evicts the least recently used entries past the byte budget', () => {
    const c = lru();
    c.set('a', Buffer.alloc(40));
    c.set('b', Buffer.alloc(40));
    assert.ok(c.get('a')); // a is now the most recent
    c.set('c', Buffer.alloc(40));
    assert.equal(c.get('b'), undefined);
    assert.ok(c.get('a'));
    assert.ok(c.get('c'));
    assert.equal(c.bytes, 80);
  });

  it('counts a hit on the most recent entry and on each entry touched after it', () => {
    const c = lru();
    c.set('a', Buffer.alloc(40));
    c.set('b', Buffer.alloc(40));
    assert.ok(c.get('a'));
    assert.ok(c.get('b')); // b again the most recent, a the least
    assert.ok(c.get('b'));
    c.set('c', Buffer.alloc(40));
    assert.equal(c.get('a'), undefined);
    assert.ok(c.get('b'));
    c.delete('c');
    c.set('d', Buffer.alloc(40));
    c.set('e', Buffer.alloc(40)); // b, d, e: 120 bytes, b goes
    assert.equal(c.get('b'), undefined);
    assert.ok(c.get('d'));
    assert.ok(c.get('e'));
  });

  it('keeps no entry larger than the item cap and accounts replacements', () => {
    const c = lru();
    c.set('big', Buffer.alloc(41));
    assert.equal(c.get('big'), undefined);
    c.set('k', Buffer.alloc(30));
    c.set('k', Buffer.alloc(10));
    assert.equal(c.bytes, 10);
    c.delete('k');
    assert.equal(c.bytes, 0);
    assert.equal(c.size, 0);
  });

  it('drops the old value when its replacement is too large to keep', () => {
    const c = lru();
    c.set('k', Buffer.alloc(10));
    c.set('k', Buffer.alloc(41));
    assert.equal(c.get('k'), undefined);
    assert.equal(c.bytes, 0);
  });
});
