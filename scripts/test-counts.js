// The test counts node's spec reporter prints at the end of a file ("ℹ tests 12", "ℹ skipped 1"...),
// summed over the run by scripts/test.js so its summary says how many tests ran, failed and skipped.
const KEYS = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];

/** A file's counts; {} when it printed none (it crashed or was stopped before its summary). */
export function countsOf(output) {
  const out = {};
  for (const k of KEYS) {
    const all = [...output.matchAll(new RegExp(`^ℹ ${k} (\\d+)$`, 'gm'))];
    const last = all.at(-1);
    if (last) out[k] = Number(last[1]);
  }
  return out;
}

/** The run's totals; `unknown` is the number of files that printed no counts. */
export function sumCounts(list) {
  const total = Object.fromEntries(KEYS.map((k) => [k, 0]));
  total.unknown = 0;
  for (const c of list) {
    if (c.tests === undefined) total.unknown++;
    for (const k of KEYS) total[k] += c[k] ?? 0;
  }
  return total;
}
