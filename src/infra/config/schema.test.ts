import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { budget, budgetText, bytes, duration, type Field, humanBytes, rate } from './schema.ts';

function value<T>(f: Field<T>, raw: unknown): T {
  const r = f.parse(raw);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** parse(format(v)) must give v back: that is what makes `devutil config` output loadable. */
function roundTrips<T>(f: Field<T>, v: T): void {
  assert.deepEqual(value(f, f.format ? f.format(v) : v), v, JSON.stringify(v));
}

describe('config field types', () => {
  const ms = duration(1000, { unit: 'ms', doc: '' });
  const sec = duration(60, { unit: 's', doc: '' });
  const goStyle = duration(60_000, { unit: 'ms', plain: 's', doc: '' });

  it('reads durations with units into the key unit, and plain numbers in its plain unit', () => {
    const table: [Field<number>, unknown, number][] = [
      [ms, '30s', 30_000],
      [ms, '5m', 300_000],
      [ms, '1500ms', 1500],
      [ms, '2h', 7_200_000],
      [ms, '1.5s', 1500],
      [ms, '1.1s', 1100],
      [ms, '1m30s', 90_000],
      [ms, ' 250 ', 250],
      [ms, 250, 250],
      [sec, '2h', 7200],
      [sec, '7d', 604_800],
      [sec, 90, 90],
      [goStyle, '90', 90_000],
      [goStyle, 1.5, 1500],
      [goStyle, '500ms', 500],
    ];
    for (const [f, raw, want] of table) assert.equal(value(f, raw), want, String(raw));
    for (const raw of ['', 'soon', '5 minutes', '-1s', '1s-', '1e3', true, null, [1]])
      assert.equal(ms.parse(raw).ok, false, String(raw));
    assert.equal(sec.parse('1500ms').ok, false);
  });

  it('prints durations, sizes and rates in a form they read back unchanged', () => {
    assert.equal(ms.format?.(90_000), '90s');
    assert.equal(ms.format?.(3_600_000), '1h');
    assert.equal(ms.format?.(1500), '1500ms');
    assert.equal(ms.format?.(0), 0);
    assert.equal(sec.format?.(86_400), '1d');
    for (const v of [0, 1, 999, 1500, 60_000, 90_000, 86_400_000]) roundTrips(ms, v);
    for (const v of [0, 1, 59, 61, 3600, 604_800]) roundTrips(sec, v);
    for (const v of [100, 1500, 60_000, 90_000]) roundTrips(goStyle, v);

    const size = bytes(0, { doc: '' });
    assert.equal(size.format?.(1024 ** 3), '1GiB');
    assert.equal(size.format?.(1500), 1500);
    for (const v of [0, 1, 1500, 1024, 3 * 1024 ** 3, 10 * 1024 ** 2 + 1]) roundTrips(size, v);

    const r = rate('off', { doc: '' });
    assert.equal(r.format?.(value(r, '30/min')), '30/min');
    assert.equal(r.format?.(value(r, '5/10s')), '5/10s');
    assert.equal(r.format?.(value(r, '100/90s')), '100/90s');
    assert.equal(r.format?.(value(r, '1000/h')), '1000/h');
    for (const raw of ['30/min', '5/5s', '20/2min', '1/d', 'off']) roundTrips(r, value(r, raw));
    // A zero budget is unlimited whatever its window, so it prints and reads back as off.
    assert.deepEqual(value(r, '0/10s'), value(r, 'off'));
  });
});

describe('sizes in messages', () => {
  const rows: [number, string][] = [
    [0, '0 bytes'],
    [1, '1 byte'],
    [1023, '1023 bytes'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [10_000, '9.77 KiB (10000 bytes)'],
    [16 * 1024 ** 2, '16 MiB'],
    [16 * 1024 ** 2 + 1, '16 MiB (16777217 bytes)'],
    [2 * 1024 ** 3, '2 GiB'],
    [3 * 1024 ** 4, '3 TiB'],
  ];
  for (const [n, text] of rows)
    it(`writes ${n} as ${text}`, () => {
      assert.equal(humanBytes(n), text);
    });

  it('names a budget in units and its window', () => {
    const f = budget('off', { doc: '' });
    const text = (raw: string) => {
      const r = f.parse(raw);
      assert.ok(r.ok, raw);
      return budgetText(r.value);
    };
    assert.equal(text('524288/day'), '512 KiB per day');
    assert.equal(text('500MiB/12h'), '500 MiB per 12 hours');
    assert.equal(text('off'), 'off');
  });

  it('gives the minimum of a size in units when a value is below it', () => {
    const f = bytes(65_536, { doc: '', min: 1024 });
    for (const raw of ['5', 5, '0.5KiB']) {
      const r = f.parse(raw);
      assert.equal(r.ok, false);
      assert.match(r.ok ? '' : r.error, /is below the minimum of 1 KiB$/);
    }
  });
});
