// Waiting in tests: poll a condition under a clock bound, never a fixed sleep that assumes a fast
// machine (a busy 2-core box runs background work in its own time).

/**
 * Polls `cond` (sync or async) every `everyMs` until it holds; when `ms` pass without it, throws
 * naming `what`. A condition that throws ends the wait with its error: catch inside `cond` to poll
 * through. A costly condition (one that spawns `ps`) over a long wait asks less often.
 */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  ms = 30_000,
  everyMs = 50,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
