// parseJson: JSON.parse's values for every valid text, a duplicate key refused (or read first-wins)
// at any depth, malformed text and deep nesting refused, "__proto__" kept as a plain key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DuplicateKey, JsonError, parseJson } from './strict-json.ts';

const refuse = (t: string) => parseJson(t, { duplicates: 'refuse', maxDepth: 32 });
const first = (t: string) => parseJson(t, { duplicates: 'first', maxDepth: 32 });

describe('strict JSON', { timeout: 60_000 }, () => {
  it('reads every value JSON.parse reads, the same', () => {
    for (const t of [
      '{}',
      '[]',
      ' { "a" : [1, -2.5e3, true, false, null, "x\\u00e9\\n\\"", {"b": {}}] } ',
      '"\\ud83d\\ude00"',
      '0',
      '-0.0E+2',
      '{"__proto__": {"polluted": 1}}',
    ])
      assert.deepEqual(refuse(t), JSON.parse(t), t);
    fc.assert(
      fc.property(fc.json(), (t) => {
        assert.deepEqual(first(t), JSON.parse(t));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps "__proto__" an own key, never the prototype', () => {
    const v = refuse('{"__proto__": {"polluted": 1}}') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.deepEqual(Object.keys(v), ['__proto__']);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  const dups: [string, string][] = [
    ['at the top', '{"chat_id": 1, "chat_id": 2}'],
    ['nested', '{"reply_parameters": {"message_id": 1, "chat_id": 2, "chat_id": 3}}'],
    ['inside an array', '[{"a": 1}, {"b": 1, "b": 1}]'],
    ['spelled with an escape', '{"chat_id": 1, "chat\\u005fid": 2}'],
  ];
  for (const [what, t] of dups)
    it(`refuses a duplicate key ${what}, and reads the first when asked to`, () => {
      assert.throws(() => refuse(t), DuplicateKey);
      assert.doesNotThrow(() => first(t));
    });

  it('reads the first of two keys in first-wins mode (where JSON.parse reads the last)', () => {
    assert.deepEqual(first('{"chat_id": 1, "x": {"k": "a", "k": "b"}, "chat_id": 2}'), {
      chat_id: 1,
      x: { k: 'a' },
    });
  });

  for (const t of [
    '',
    '{',
    '{"a":1,}',
    '[1,]',
    "{'a':1}",
    '{"a" 1}',
    'NaN',
    '01',
    '1.',
    '"\t"',
    '"\\x41"',
    '{"a":1} x',
    'tru',
    '[1 2]',
  ])
    it(`refuses malformed JSON ${JSON.stringify(t)}`, () => {
      assert.throws(() => refuse(t), JsonError);
      assert.throws(() => JSON.parse(t));
    });

  it('refuses nesting past maxDepth without deep recursion', () => {
    assert.doesNotThrow(() =>
      parseJson(`${'['.repeat(5)}${']'.repeat(5)}`, { duplicates: 'refuse', maxDepth: 5 }),
    );
    assert.throws(
      () => parseJson(`${'['.repeat(6)}${']'.repeat(6)}`, { duplicates: 'refuse', maxDepth: 5 }),
      /nested deeper than 5/,
    );
    assert.throws(() => refuse('['.repeat(100_000)), /nested deeper than 32/);
  });
});
