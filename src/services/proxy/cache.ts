// On-disk cache for immutable upstream content (docs/protocols/reverse-proxy.md §7): Debian pool/ and
// by-hash/, PyPI files, release assets keyed by their github.com URL; Release files and PyPI pages are
// revalidated. Concurrent misses for one object share one upstream fetch; Range is served from complete
// objects. The objects live in the shared cache (infra/cache/cache.ts); this file is the proxy's policy.
import type { IncomingHttpHeaders } from 'node:http';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { Cache, type CacheEntry } from '../../infra/cache/cache.ts';
import { ByteLru } from '../../infra/cache/lru.ts';
import { conditionalHeaders } from '../../infra/egress/revalidate.ts';
import { evaluate, validatorsOf } from '../../infra/http/conditional.ts';
import { PreparedMemo } from '../../infra/http/prepared-response.ts';
import { contentRange, rangeOf } from '../../infra/http/range.ts';
import { storeRule, urlKey, variantKey, varyNames } from './cache-rules.ts';
import type { ForwardOptions, ForwardRequest, LaneHit, Upstream } from './forward.ts';
import { forwarding } from './forwarding.ts';

/** forward(), loaded with the first request the proxy forwards (forwarding.ts). */
const forward = async (o: ForwardOptions, r: ForwardRequest): Promise<Upstream> =>
  (forwarding.value ?? (await forwarding.get())).forward(o, r);

/** Relayed response headers kept with an object (content-length is its size, set when answering). */
const STORED = ['content-type', 'etag', 'last-modified', 'content-disposition', 'cache-control', 'vary'];

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

type Stored = { headers: Record<string, string> };
/**
 * The proxy's shared store, also lent to ecosystem profiles (ecosystems/define.ts): their keys start
 * with `<ecosystem>:` so they never meet the URL keys of the host-path form.
 */
export type ProxyStore = Cache<Stored>;
type Entry = CacheEntry<Stored>;
type Span = { status: number; headers: Record<string, string>; start: number; end: number };

/** How long a replaced or evicted body file stays for an nginx told to send it (X-Accel-Redirect). */
const RETIRED_BODY_MS = 10_000;

/** The proxy's store: disk for everything cacheable, memory for small hot objects only. */
export function createStore(
  dir: string,
  diskBytes: number,
  memoryBytes: number,
  offloaded: boolean,
  onError: (err: unknown) => void,
): Cache<Stored> {
  // Small objects from memory skip the file system round trips; big ones stream from disk.
  const memoryItemBytes = Math.min(256 * 1024, Math.floor(memoryBytes / 16));
  // nginx opens a body file a moment after devutil named it: a replacement or an eviction in
  // between must not make it 404, so old body files outlive their entries by a few seconds.
  const retiredBodyMs = offloaded ? RETIRED_BODY_MS : 0;
  return new Cache<Stored>({
    name: 'proxy',
    dir,
    diskBytes,
    memoryBytes,
    memoryItemBytes,
    retiredBodyMs,
    onError,
  });
}

/**
 * How to answer from a complete cached object: a finished reply (304, 416, HEAD, empty body) or
 * the status, headers and byte span to send. As a cache: If-None-Match and If-Modified-Since are
 * answered here, If-Match and If-Unmodified-Since are left alone (infra/http/conditional.ts).
 */
function answer(e: Entry, r: ForwardRequest): Upstream | Span {
  const h: Record<string, string> = { ...e.meta.headers, 'accept-ranges': 'bytes', 'x-cache': 'HIT' };
  const v = validatorsOf(h);
  if (evaluate(r.method, r.headers, v, { cache: true }) === 'not-modified')
    return { status: 304, headers: h, body: null, url: r.url };
  let start = 0;
  let end = e.size - 1;
  let status = 200;
  // Several ranges are answered with the whole (RFC 9110 14.2 lets a server ignore Range).
  const range = rangeOf(r.method, r.headers, v, e.size);
  if (range.kind === 'unsatisfiable')
    return {
      status: 416,
      headers: { 'content-range': contentRange(null, e.size) },
      body: null,
      text: '',
      url: r.url,
    };
  if (range.kind === 'single') {
    ({ start, end } = range);
    status = 206;
    h['content-range'] = contentRange(range, e.size);
  }
  h['content-length'] = String(end - start + 1);
  if (r.method === 'HEAD' || e.size === 0)
    return { status, headers: h, body: null, ...(r.method === 'HEAD' ? {} : { text: '' }), url: r.url };
  return { status, headers: h, start, end };
}

/** The client asks for a revalidation (Cache-Control: no-cache or max-age=0, Pragma: no-cache). */
function forcedCheck(h: IncomingHttpHeaders): boolean {
  const text = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : (v ?? ''));
  return /no-cache|max-age=0/.test(text(h['cache-control'])) || /no-cache/.test(text(h['pragma']));
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
  private prepared = new PreparedMemo();

  readonly store: Cache<Stored>;
  private ttlMs: number;
  private stats: CacheStats;
  /** nginx internal location aliasing the cache directory (X-Accel-Redirect); empty = off. */
  private accelPrefix: string;
  constructor(store: Cache<Stored>, ttlMs: number, stats: CacheStats, accelPrefix = '') {
    this.store = store;
    this.ttlMs = ttlMs;
    this.stats = stats;
    this.accelPrefix = accelPrefix;
  }

  /**
   * Sends a cached object: small ones from memory (loaded on first use), others from disk, by
   * nginx when offloading.
   */
  private async fromEntry(e: Entry, r: ForwardRequest): Promise<Upstream | undefined> {
    const a = answer(e, r);
    if ('url' in a) return a;
    const { status, headers, start, end } = a;
    const small =
      r.method === 'GET' && e.size <= this.store.memoryItemBytes ? await this.store.body(e) : undefined;
    const up: Upstream | undefined = small
      ? { status, headers, body: null, text: small.subarray(start, end + 1), url: r.url }
      : (this.offload(e, r, a) ??
        (await this.store
          .stream(e, start, end)
          .then((body) => body && { status, headers, body, url: r.url })));
    if (up) this.stats.onBytes('cache', end - start + 1);
    return up;
  }

  /**
   * X-Accel-Redirect to the object's body file, for nginx to send with the headers set here: the
   * whole object, or the single range answer() took (nginx applies the same Range and If-Range,
   * compared with these ETag and Last-Modified). A Range answered whole here (several ranges, a
   * stale If-Range, an invalid one) or merged into one here stays here, where nginx might answer
   * it otherwise. Conditional requests and HEAD never get this far (answer() settled them).
   */
  private offload(e: Entry, r: ForwardRequest, a: Span): Upstream | undefined {
    const range = header(r, 'range');
    if (!this.accelPrefix || (range !== undefined && (a.status !== 206 || range.includes(','))))
      return undefined;
    const file = this.store.bodyFile(e);
    if (!file) return undefined;
    const headers: Record<string, string> = { ...a.headers, 'x-accel-redirect': this.accelPrefix + file };
    // nginx frames the body and writes Content-Range; it adds Accept-Ranges to a whole answer only
    // (and keeps ours, so a whole answer with both would say it twice).
    delete headers['content-length'];
    delete headers['content-range'];
    if (a.status === 200) delete headers['accept-ranges'];
    return { status: 200, headers, body: null, offloaded: a.end - a.start + 1, url: r.url };
  }

  /**
   * A whole small object from memory, without an await: its 200 and 304 headers are prepared once
   * per stored body (answer() does the same per request for the other cases: Range, HEAD, disk).
   * Revalidated objects take the slow path, which checks their freshness first.
   */
  private hot(key: string, r: ForwardRequest): Upstream | undefined {
    if (r.method !== 'GET' || r.headers.range !== undefined) return undefined;
    // A revalidated object while it is fresh (the check fresh() makes before asking upstream).
    const revalidate = r.route.cache === 'revalidate';
    if (revalidate && forcedCheck(r.headers)) return undefined;
    const now = Date.now();
    const hit = this.store.memory(key, revalidate ? (e) => now - e.checkedAt < this.ttlMs : undefined);
    if (!hit) return undefined;
    const p = this.prepared.get(hit.body, '', () => ({
      headers: { ...hit.entry.meta.headers, 'accept-ranges': 'bytes', 'x-cache': 'HIT' },
      omitOn304: ['content-length'],
      cache: true,
    }));
    if (p.precondition(r) === 'not-modified')
      return { status: 304, headers: p.notModifiedHeaders, body: null, url: r.url };
    this.stats.onBytes('cache', p.body.length);
    // Repeats of this URL may come from the fast lane while the memory tier holds this very body
    // (and, revalidated, while it is fresh); each is a hit, counted as this one is.
    const stats = this.stats;
    const lane: LaneHit = {
      prepared: p,
      remember: {
        valid: () => this.store.holds(key, p.body),
        ...(revalidate ? { until: hit.entry.checkedAt + this.ttlMs, accepts: (h) => !forcedCheck(h) } : {}),
        // A rewritten body depends on Accept (keyOf).
        ...(r.route.rewrite ? { vary: ['accept'] } : {}),
        onHit: (_status, _ip, bytes) => {
          stats.onResult('hit');
          if (bytes) stats.onBytes('cache', bytes);
        },
      },
    };
    return { status: 200, headers: p.headers, body: null, text: p.body, url: r.url, lane };
  }

  private keyOf(r: ForwardRequest, o: ForwardOptions): string | null {
    if (r.route.cache === 'none' || (r.method !== 'GET' && r.method !== 'HEAD')) return null;
    if (r.headers.authorization) return null;
    if (r.route.cacheKey) return r.route.cacheKey;
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
    const hot = this.hot(key, r);
    if (hot) {
      this.stats.onResult('hit');
      return hot;
    }
    let e = await this.store.peek(key);
    if (e && r.route.cache === 'revalidate' && !(await this.fresh(e, r, o, log))) e = undefined;
    // An object evicted or replaced between the lookup and the read is a miss.
    const hit = e && (await this.fromEntry(e, r));
    if (hit) {
      this.stats.onResult('hit');
      return hit;
    }
    this.stats.onResult('miss');
    // Only a plain full GET fills the cache; Range, conditional and HEAD misses pass through.
    const partial =
      r.method !== 'GET' ||
      ['range', 'if-range', 'if-none-match', 'if-modified-since'].some((h) => r.headers[h]);
    if (partial || this.fills.has(key)) return this.counted(await forward(o, r));
    return this.fill(key, base, r, o);
  }

  /** A stored revalidate-class object is fresh, or was confirmed by a conditional upstream request. */
  private async fresh(
    e: Entry,
    r: ForwardRequest,
    o: ForwardOptions,
    log: FastifyBaseLogger,
  ): Promise<boolean> {
    if (!forcedCheck(r.headers) && Date.now() - e.checkedAt < this.ttlMs) return true;
    const stored = e.meta.headers;
    if (r.route.rewrite || (!stored['etag'] && !stored['last-modified'])) return false;
    const headers: Record<string, string> = { 'user-agent': header(r, 'user-agent') ?? 'devutil-proxy' };
    // The validators belong to this variant: ask for it with the headers that selected it.
    const names = varyNames(stored['vary']);
    for (const n of names === '*' ? [] : names) {
      const v = header(r, n);
      if (v !== undefined) headers[n] = v;
    }
    Object.assign(
      headers,
      conditionalHeaders({ etag: stored['etag'], lastModified: stored['last-modified'] }),
    );
    try {
      const up = await forward(o, { ...r, method: 'GET', headers });
      up.body?.resume();
      if (up.status === 304) {
        await this.store.touch(e.key);
        this.stats.onResult('revalidated');
        return true;
      }
      // Changed upstream: forget the stale copy so the next plain GET stores the new one.
      if (up.status === 200) this.store.delete(e.key);
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
  private async fill(key: string, base: string, r: ForwardRequest, o: ForwardOptions): Promise<Upstream> {
    let done: (ok: boolean) => void = () => {};
    const filling = new Promise<boolean>((res) => {
      done = res;
    });
    this.fills.set(key, filling);
    // The keys this fill is registered under: the one looked up and, once the answer names its
    // Vary, the variant it is stored under (what the next request for that variant looks up).
    const keys = [key];
    const finish = (ok: boolean) => {
      for (const k of keys) if (this.fills.get(k) === filling) this.fills.delete(k);
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
      Number(up.headers['content-length'] ?? 0) <= this.store.diskItemBytes;
    if (!storable || (!up.body && up.text === undefined)) {
      finish(false);
      return this.counted(up);
    }
    // Stored under the variant the response names (which may differ from what was looked up).
    if (rule.vary.length) this.varies.set(base, rule.vary);
    else this.varies.delete(base);
    const storeKey = variantKey(base, rule.vary, r.headers);
    if (storeKey !== key && !this.fills.has(storeKey)) {
      this.fills.set(storeKey, filling);
      keys.push(storeKey);
    }
    const stored: Stored = { headers: {} };
    for (const h of STORED) if (up.headers[h] !== undefined) stored.headers[h] = up.headers[h] as string;
    if (up.text !== undefined) {
      const buf = Buffer.from(up.text);
      void this.store.put(storeKey, buf, stored).then(finish);
      this.stats.onBytes('upstream', buf.length);
      return up;
    }
    const expected = Number(up.headers['content-length'] ?? Number.NaN);
    const writer = this.store.writer(
      storeKey,
      stored,
      Number.isNaN(expected) ? {} : { expectedSize: expected },
    );
    void writer.done.then((ok) => {
      if (ok) this.stats.onBytes('upstream', writer.bytes);
      finish(ok);
    });
    return { ...up, body: tee(up.body as Readable, writer) };
  }
}

/** The upstream body to this client and, as it flows, into the cache (which never stalls on error). */
function tee(body: Readable, writer: Writable): Readable {
  const client = new PassThrough();
  body.on('error', (err) => {
    writer.destroy();
    client.destroy(err);
  });
  // A client that leaves does not stop the fill: the object is still worth keeping.
  client.on('close', () => body.unpipe(client));
  body.pipe(writer);
  body.pipe(client);
  return client;
}
