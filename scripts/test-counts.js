// The test counts node's spec reporter prints at the end of a file ("ℹ tests 12", "ℹ skipped 1"...),
// summed over the run by scripts/test.js so its summary says how many tests ran, failed and skipped.
// scripts/test.js runs each file itself (no `node --test` parent): the file's own spec reporter
// prints these lines, the same as the parent did, but for a file that failed outside its tests.
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

/**
 * The counts of a file the runner ran: a file that failed (non-zero exit) with no failing or cancelled
 * test in its counts, or none at all (a top-level throw, an error after its tests, a non-zero
 * process.exitCode), counts as one failing test more, as `node --test` counted such a file.
 */
export function fileCounts(output, failed) {
  const c = countsOf(output);
  if (!failed || (c.fail ?? 0) + (c.cancelled ?? 0) > 0) return c;
  return { ...c, tests: (c.tests ?? 0) + 1, fail: 1 };
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
