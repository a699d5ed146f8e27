// The order scripts/test.js runs files in: longest first by earlier times (files never timed first),
// so a long file does not start last and stretch the run; beside a heavy file (HEAVY in
// scripts/test-tiers.js: minutes of full CPU and disk), the shortest files, one at a time whatever
// the run's concurrency, and never another heavy one, so timing-sensitive files do not share the
// machine with it.

/** `files` longest first by `durations` (ms per file); untimed files first. */
export function longestFirst(files, durations) {
  return [...files].sort((a, b) => (durations[b] ?? Infinity) - (durations[a] ?? Infinity));
}

/** Takes the next file to run out of `queue` (longest first), given the files running now. */
export function takeNext(queue, running, heavy) {
  if (![...running].some((f) => f in heavy)) return queue.shift();
  for (let i = queue.length - 1; i >= 0; i--) if (!(queue[i] in heavy)) return queue.splice(i, 1)[0];
  return queue.shift(); // heavy files only are left
}

/**
 * Whether a worker may take a file now, given the files running: at most `concurrency`; while a
 * heavy file runs or is next, at most two (it and one of the shortest beside it, as at two at a
 * time); and no heavy file beside another (the worker waits for it to end). With nothing left to
 * take, true: the worker finds the queue empty and ends.
 */
export function mayStart(queue, running, heavy, concurrency) {
  if (queue.length === 0) return true;
  const now = [...running];
  const heavyRuns = now.some((f) => f in heavy);
  if (heavyRuns && queue.every((f) => f in heavy)) return false;
  const limit = heavyRuns || queue[0] in heavy ? Math.min(concurrency, 2) : concurrency;
  return now.length < limit;
}

/**
 * The number of files to run at once for the next few seconds, from `limit` (the number now) and
 * `busy`, the share of the machine's CPU time that was not idle since the last reading: one more,
 * up to `max`, while the cores were idle more than a quarter of the time with every slot taken
 * (files that wait on timers, sockets or other processes leave them idle, and CI's run is short of
 * CPU, not of slots), one fewer, down to `base`, while they are nearly saturated.
 */
export function nextLimit(limit, busy, slotsTaken, base, max) {
  if (busy < 0.75 && slotsTaken) return Math.min(max, limit + 1);
  if (busy > 0.95) return Math.max(base, limit - 1);
  return Math.min(max, Math.max(base, limit));
}
