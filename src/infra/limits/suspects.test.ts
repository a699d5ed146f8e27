import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Suspects } from './suspects.ts';

describe('quarantine suspects', { timeout: 10_000 }, () => {
  const key = (s: string) => () => Suspects.sourceKey(s);

  it('makes a source a suspect at its first strike, its client only at the second', () => {
    let now = 0;
    const s = new Suspects({ windowMs: 60_000, now: () => now });
    assert.equal(s.suspect('1.2.3.4', key('bomb')), false);
    s.strike('1.2.3.4', Suspects.sourceKey('bomb'));
    assert.equal(s.suspect('5.6.7.8', key('bomb')), true, 'the same source from anyone');
    assert.equal(s.suspect('1.2.3.4', key('small')), false, 'one strike does not make the client a suspect');
    now += 1000;
    s.strike('1.2.3.4', Suspects.sourceKey('bomb 2'));
    assert.equal(s.suspect('1.2.3.4', key('small')), true, 'the second does');
    assert.equal(s.suspect('5.6.7.8', key('small')), false, 'other clients are not');
  });

  it('forgets after the window, never suspects the server itself, and is off with a window of 0', () => {
    let now = 0;
    const s = new Suspects({ windowMs: 10_000, now: () => now });
    s.strike('', Suspects.sourceKey('a'));
    s.strike('', Suspects.sourceKey('b'));
    assert.equal(s.suspect('', key('c')), false, "the server's own work ('') is never a suspect client");
    assert.equal(s.suspect('x', key('a')), true);
    now += 10_001;
    assert.equal(s.suspect('x', key('a')), false, 'forgotten after the window');
    const off = new Suspects({ windowMs: 0 });
    off.strike('1.2.3.4', Suspects.sourceKey('a'));
    off.strike('1.2.3.4', Suspects.sourceKey('a'));
    assert.equal(off.enabled, false);
    assert.equal(off.suspect('1.2.3.4', key('a')), false);
  });

  it('does not hash the source while there are no suspects, and stays within its size', () => {
    const s = new Suspects({ windowMs: 60_000, max: 100 });
    let hashed = 0;
    assert.equal(
      s.suspect('a', () => {
        hashed++;
        return 'x';
      }),
      false,
    );
    assert.equal(hashed, 0);
    for (let i = 0; i < 1000; i++) s.strike(`c${i}`, Suspects.sourceKey(`s${i}`));
    assert.equal(s.suspect('c999', key('new')), false, 'one strike each');
    assert.equal(s.suspect('x', key('s999')), true, 'the newest are kept');
    assert.equal(s.suspect('x', key('s0')), false, 'the oldest forgotten');
  });
});
