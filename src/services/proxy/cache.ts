// On-disk cache for immutable upstream content (digest §7): Debian pool/ and by-hash/, PyPI files,
// release assets keyed by their github.com URL; Release files and PyPI pages are revalidated.
// Concurrent misses for one object share one upstream fetch; Range is served from complete objects.
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { ByteLru } from '../../infra/lru.ts';
import { storeRule, urlKey, variantKey, varyNames } from './cache-rules.ts';
import type { CacheStore, Entry } from './cache-store.ts';
import { type ForwardOptions, type ForwardRequest, forward, type Upstream } from './forward.ts';

const STORED = [
  'content-type',
  'content-length',
  'etag',
  'last-modified',
  'content-disposition',
  'cache-control',
  'vary',
];

export interface CacheStats {
  onResult(result: 'hit' | 'miss' | 'revalidated' | 'stale' | 'bypass'): void;
  onBytes(source: 'cache' | 'upstream', n: number): void;
}

export interface ProxyCache {
  serve(r: ForwardRequest, o: ForwardOptions, log: FastifyBaseLogger): Promise<Upstream>;
}

function header(r: ForwardRequest, name: string): string | undefined {
  const v = r.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Answers a request from a complete cached object: 304, 206 or 200, HEAD without a body. */
function fromEntry(
  store: CacheStore,
  e: Entry,
  r: ForwardRequest,
  stats: CacheStats,
  mem?: Buffer,
): Upstream {
  const h: Record<string, string> = { ...e.headers, 'accept-ranges': 'bytes', 'x-cache': 'HIT' };
  const inm = header(r, 'if-none-match');
  const ims = header(r, 'if-modified-since');
  const lm = e.headers['last-modified'];
  if (
    (inm && e.headers['etag'] && inm === e.headers['etag']) ||
    (!inm && ims && lm && Date.parse(ims) >= Date.parse(lm))
  ) {
    delete h['content-length'];
    return { status: 304, headers: h, body: null, url: r.url };
  }
  let start = 0;
  let end = e.size - 1;
  let status = 200;
  const range = /^bytes=(\d*)-(\d*)$/.exec(header(r, 'range') ?? '');
  const ifRange = header(r, 'if-range');
  if (range && (range[1] || range[2]) && (!ifRange || ifRange === e.headers['etag'] || ifRange === lm)) {
    start = range[1] ? Number(range[1]) : Math.max(0, e.size - Number(range[2]));
    end = range[1] && range[2] ? Math.min(Number(range[2]), e.size - 1) : e.size - 1;
    if (start >= e.size || start > end)
      return {
        status: 416,
        headers: { 'content-range': `bytes */${e.size}` },
        body: null,
        text: '',
        url: r.url,
      };
    status = 206;
    h['content-range'] = `bytes ${start}-${end}/${e.size}`;
  }
  h['content-length'] = String(end - start + 1);
  if (r.method === 'HEAD' || e.size === 0)
    return { status, headers: h, body: null, ...(r.method === 'HEAD' ? {} : { text: '' }), url: r.url };
  stats.onBytes('cache', end - start + 1);
  if (mem) return { status, headers: h, body: null, text: mem.subarray(start, end + 1), url: r.url };
  return { status, headers: h, body: createReadStream(store.path(e.key), { start, end }), url: r.url };
}

/** Small hot objects kept in memory (LRU, bounded), so hits skip four file-system round trips. */
export class MemoryTier extends ByteLru<Buffer> {
  constructor(maxBytes: number) {
    super(maxBytes, (b) => b.length, Math.min(256 * 1024, Math.floor(maxBytes / 16)));
  }
}

const COALESCE_WAIT_MS = 10_000;
// URLs whose last response carried Vary, with the header names (bounded; forgotten on restart, when
// the next fill learns them again).
const VARY_URLS = 10_000;

function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    p.then(
      () => {
        clearTimeout(t);
        resolve();
      },
      () => {
        clearTimeout(t);
        resolve();
      },
    );
  });
}

export class DiskCache implements ProxyCache {
  private fills = new Map<string, Promise<boolean>>();
  private varies = new ByteLru<string[]>(VARY_URLS, () => 1, 1);

  private mem: MemoryTier;

  readonly store: CacheStore;
  private ttlMs: number;
  private stats: CacheStats;
  constructor(store: CacheStore, ttlMs: number, stats: CacheStats, memoryBytes = 0) {
    this.store = store;
    this.ttlMs = ttlMs;
    this.stats = stats;
    this.mem = new MemoryTier(memoryBytes);
    store.onDrop = (key) => this.mem.delete(key);
  }

  /** The object's bytes when it is small enough for the memory tier (loaded on first use). */
  private async small(e: Entry): Promise<Buffer | undefined> {
    if (e.size > this.mem.maxItemBytes || e.size === 0) return undefined;
    const hit = this.mem.get(e.key);
    if (hit) return hit;
    try {
      const b = await readFile(this.store.path(e.key));
      if (b.length !== e.size) return undefined;
      this.mem.set(e.key, b);
      return b;
    } catch {
      return undefined;
    }
  }

  private keyOf(r: ForwardRequest, o: ForwardOptions): string | null {
    if (r.route.cache === 'none' || (r.method !== 'GET' && r.method !== 'HEAD')) return null;
    if (r.headers.authorization) return null;
    // Rewritten bodies depend on the Accept header and on the proxy base they point at.
    if (r.route.rewrite) return `${urlKey(r.url)}\n${header(r, 'accept') ?? ''}\n${o.links.base}`;
    return urlKey(r.url);
  }

  /** The key of the variant this request selects, by the Vary names last seen for the URL. */
  private variant(base: string, r: ForwardRequest): string {
    const names = this.varies.get(base);
    return names ? variantKey(base, names, r.headers) : base;
  }

  async serve(r: ForwardRequest, o: ForwardOptions, log: FastifyBaseLogger): Promise<Upstream> {
    const base = this.keyOf(r, o);
    if (base === null) {
      this.stats.onResult('bypass');
      return this.counted(await forward(o, r));
    }
    let key = this.variant(base, r);
    const pending = this.fills.get(key);
    // Wait for a running fill, but not for long: clients such as apt give up after ~30 s without
    // bytes, so a waiter past COALESCE_WAIT_MS fetches on its own (uncached).
    if (pending) {
      await waitAtMost(pending, COALESCE_WAIT_MS);
      key = this.variant(base, r); // the fill may have learnt that the URL varies
    }
    let e = this.store.get(key);
    if (e && r.route.cache === 'revalidate' && !(await this.fresh(e, r, o, log))) e = undefined;
    if (e) {
      this.stats.onResult('hit');
      const mem = r.method === 'GET' ? await this.small(e) : undefined;
      return fromEntry(this.store, e, r, this.stats, mem);
    }
    this.stats.onResult('miss');
    // Only a plain full GET fills the cache; Range, conditional and HEAD misses pass through.
    const partial =
      r.method !== 'GET' ||
      ['range', 'if-range', 'if-none-match', 'if-modified-since'].some((h) => r.headers[h]);
    if (partial || this.fills.has(key)) return this.counted(await forward(o, r));
    return this.fill(key, base, r, o, log);
  }

  /** A stored revalidate-class object is fresh, or was confirmed by a conditional upstream request. */
  private async fresh(
    e: Entry,
    r: ForwardRequest,
    o: ForwardOptions,
    log: FastifyBaseLogger,
  ): Promise<boolean> {
    const cc = header(r, 'cache-control') ?? '';
    const forced = /no-cache|max-age=0/.test(cc) || /no-cache/.test(header(r, 'pragma') ?? '');
    if (!forced && Date.now() - e.checkedAt < this.ttlMs) return true;
    if (r.route.rewrite || (!e.headers['etag'] && !e.headers['last-modified'])) return false;
    const headers: Record<string, string> = { 'user-agent': header(r, 'user-agent') ?? 'devutil-proxy' };
    // The validators belong to this variant: ask for it with the headers that selected it.
    const names = varyNames(e.headers['vary']);
    for (const n of names === '*' ? [] : names) {
      const v = header(r, n);
      if (v !== undefined) headers[n] = v;
    }
    if (e.headers['etag']) headers['if-none-match'] = e.headers['etag'];
    if (e.headers['last-modified']) headers['if-modified-since'] = e.headers['last-modified'];
    try {
      const up = await forward(o, { ...r, method: 'GET', headers });
      up.body?.resume();
      if (up.status === 304) {
        this.store.touch(e);
        this.stats.onResult('revalidated');
        return true;
      }
      // Changed upstream: forget the stale copy so the next plain GET stores the new one.
      if (up.status === 200) this.store.drop(e.key);
    } catch (err) {
      // Upstream unreachable: a stale Release beats a failed apt update (stale-if-error).
      log.warn({ reason: (err as Error).message }, 'cache revalidation failed; serving the stored copy');
      this.stats.onResult('stale');
      return true;
    }
    return false;
  }

  private counted(up: Upstream): Upstream {
    const n = Number(up.headers['content-length'] ?? 0);
    if (up.body && n > 0) this.stats.onBytes('upstream', n);
    return up;
  }

  /** Fetches the whole object once, streaming it to this client while writing it to disk. */
  private async fill(
    key: string,
    base: string,
    r: ForwardRequest,
    o: ForwardOptions,
    log: FastifyBaseLogger,
  ): Promise<Upstream> {
    let done: (ok: boolean) => void = () => {};
    this.fills.set(
      key,
      new Promise<boolean>((res) => {
        done = res;
      }),
    );
    const finish = (ok: boolean) => {
      this.fills.delete(key);
      done(ok);
    };
    let up: Upstream;
    try {
      up = await forward(o, r);
    } catch (err) {
      finish(false);
      throw err;
    }
    const rule = storeRule(r.headers, up.headers);
    const storable =
      rule.store &&
      up.status === 200 &&
      !up.headers['content-encoding'] &&
      Number(up.headers['content-length'] ?? 0) <= this.store.maxBytes / 4;
    if (!storable || (!up.body && up.text === undefined)) {
      finish(false);
      return this.counted(up);
    }
    // Stored under the variant the response names (which may differ from what was looked up).
    if (rule.vary.length) this.varies.set(base, rule.vary);
    else this.varies.delete(base);
    const storeKey = variantKey(base, rule.vary, r.headers);
    const headers: Record<string, string> = {};
    for (const h of STORED) if (up.headers[h] !== undefined) headers[h] = up.headers[h] as string;
    const entry = (size: number): Entry => ({
      key: storeKey,
      size,
      headers: { ...headers, 'content-length': String(size) },
      checkedAt: Date.now(),
    });
    const tmp = this.store.tempPath();
    if (up.text !== undefined) {
      const buf = Buffer.from(up.text);
      const ws = createWriteStream(tmp);
      ws.end(buf, () => {
        this.commitSafe(tmp, entry(buf.length), log);
        finish(true);
      });
      ws.on('error', () => finish(false));
      this.stats.onBytes('upstream', buf.length);
      return up;
    }
    return {
      ...up,
      body: this.tee(
        up.body as Readable,
        tmp,
        Number(up.headers['content-length'] ?? Number.NaN),
        entry,
        finish,
        log,
      ),
    };
  }

  private tee(
    body: Readable,
    tmp: string,
    expected: number,
    entry: (size: number) => Entry,
    finish: (ok: boolean) => void,
    log: FastifyBaseLogger,
  ): Readable {
    const client = new PassThrough();
    const file = createWriteStream(tmp);
    let size = 0;
    let failed = false;
    const fail = () => {
      if (failed) return;
      failed = true;
      body.unpipe(file);
      file.destroy();
      rmSync(tmp, { force: true });
      finish(false);
    };
    body.on('data', (c: Buffer) => {
      size += c.length;
    });
    body.on('error', (err) => {
      fail();
      client.destroy(err);
    });
    file.on('error', fail);
    client.on('close', () => body.unpipe(client));
    body.on('end', () => {
      if (!Number.isNaN(expected) && size !== expected) fail();
    });
    file.on('finish', () => {
      if (failed) return;
      this.stats.onBytes('upstream', size);
      this.commitSafe(tmp, entry(size), log);
      finish(true);
    });
    body.pipe(file);
    body.pipe(client);
    return client;
  }

  private commitSafe(tmp: string, e: Entry, log: FastifyBaseLogger): void {
    try {
      this.store.commit(tmp, e);
    } catch (err) {
      rmSync(tmp, { force: true });
      log.warn({ reason: (err as Error).message }, 'cache store failed');
    }
  }
}
