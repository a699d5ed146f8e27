// One holder per key at a time inside this process: callers of one key run one after another, in
// the order they asked (a create-only check-and-publish, a replacement that must know what it
// replaced). A failing holder does not block the next; a key is forgotten once nobody holds or
// waits for it. Other processes are not excluded: that is the store's own condition (link(2), If-None-Match).

export class KeyedMutex {
  /** Per key: the settled-or-not end of the last holder in line. */
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Keys held or waited for now. */
  get size(): number {
    return this.tails.size;
  }

  /** `fn()` once every earlier holder of `key` has settled; its result or error is the caller's. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => {});
    this.tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
