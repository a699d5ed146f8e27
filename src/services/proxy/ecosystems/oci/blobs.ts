// Blobs (layers, configs) by digest. A blob is fetched from the registry once, however many clients
// ask for it meanwhile: the body goes to a spool file that every client follows as it arrives (from
// memory while it keeps up, so the first client does not wait on the disk), the last byte held back
// until the whole body hashed to its digest (and had its stated length). Only then is it sealed,
// released to the clients and handed to the shared cache; a body that does not match is never cached
// and every client's transfer fails before its end. Cached blobs are served from the cache with Range
// and If-None-Match.
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { Spool } from '../../../../infra/cache/spool.ts';
import { humanBytes } from '../../../../infra/config/schema.ts';
import type { ConditionalHeaders } from '../../../../infra/http/conditional.ts';
import { evaluate } from '../../../../infra/http/conditional.ts';
import { contentRange, rangeOf } from '../../../../infra/http/range.ts';
import type { ProxyStore } from '../../cache.ts';
import { ociError } from './errors.ts';
import type { Digest, ImageName } from './reference.ts';
import { type RegistryClient, upstreamRefusal } from './upstream.ts';

/** Blobs up to this size are verified whole before the answer starts (a layer streams as it comes). */
const VERIFY_FIRST = 1024 * 1024;

/** A blob on its way from the registry. */
interface Fill {
  spool: Spool;
  /** Its length as the registry stated it, or null (then ranges wait for the end). */
  size: number | null;
  /** Settles when the body was sealed (true) or failed (false). */
  done: Promise<boolean>;
}

export interface BlobAnswer {
  status: number;
  headers: Record<string, string>;
  body: Readable | null;
  text?: Buffer;
}

export interface BlobRequest {
  method: string;
  headers: ConditionalHeaders;
}

export class Blobs {
  private fills = new Map<string, Promise<Fill>>();
  private readonly store: ProxyStore | null;
  private readonly up: RegistryClient;
  private readonly spoolDir: string;
  private readonly maxBytes: number;
  private readonly log: FastifyBaseLogger;
  /** Upstream blob fetches started (for tests and metrics: one per blob however many clients). */
  fetches = 0;

  constructor(
    store: ProxyStore | null,
    up: RegistryClient,
    spoolDir: string,
    maxBytes: number,
    log: FastifyBaseLogger,
  ) {
    this.store = store;
    this.up = up;
    this.spoolDir = spoolDir;
    this.maxBytes = maxBytes;
    this.log = log;
  }

  /** Clears spool files a previous process left (the cache's own temporary files sweep themselves). */
  async init(): Promise<void> {
    await rm(this.spoolDir, { recursive: true, force: true });
    await mkdir(this.spoolDir, { recursive: true });
  }

  async serve(name: ImageName, digest: Digest, r: BlobRequest): Promise<BlobAnswer> {
    const key = `oci:blob:${digest.text}`;
    const etag = `"${digest.text}"`;
    const base = {
      'content-type': 'application/octet-stream',
      'docker-content-digest': digest.text,
      etag,
      'accept-ranges': 'bytes',
      'cache-control': 'public, max-age=31536000, immutable',
    };
    if (evaluate(r.method, r.headers, { etag, lastModified: null }, { cache: true }) === 'not-modified')
      return { status: 304, headers: { etag, 'docker-content-digest': digest.text }, body: null };
    const e = await this.store?.peek(key);
    if (e) {
      const a = this.span(r, base, etag, e.size);
      if (a.done) return a.done;
      const { start, end } = a;
      if (r.method === 'HEAD' || e.size === 0) return { ...a.head, body: null, text: Buffer.alloc(0) };
      if (e.size <= (this.store?.memoryItemBytes ?? 0)) {
        const body = await this.store?.body(e);
        if (body) return { ...a.head, body: null, text: body.subarray(start, end + 1) };
      }
      const body = await this.store?.stream(e, start, end);
      if (body) return { ...a.head, body };
      // Evicted between the lookup and the read: fetched again below.
    }
    if (r.method === 'HEAD' && !this.fills.has(key)) return this.head(name, digest, base);
    let pending = this.fills.get(key);
    if (!pending) {
      pending = this.start(key, name, digest);
      this.fills.set(key, pending);
      // A fill that never started (404, refused) is forgotten at once: the next client asks again.
      pending.catch(() => this.fills.delete(key));
    }
    const fill = await pending;
    const release = fill.spool.hold();
    try {
      return await this.fromFill(fill, digest, r, base, etag);
    } finally {
      release();
    }
  }

  /** An answer read from a fill in progress (or just finished). */
  private async fromFill(
    fill: Fill,
    digest: Digest,
    r: BlobRequest,
    base: Record<string, string>,
    etag: string,
  ): Promise<BlobAnswer> {
    // A small blob is answered once verified: a bad one then gets a clean error rather than a cut body.
    if (fill.size !== null && fill.size <= VERIFY_FIRST && !(await fill.done))
      throw ociError(502, 'DIGEST_INVALID', `blob ${digest.text} from the registry failed verification`);
    let size = fill.size;
    if (size === null) {
      // No stated length: a range (or HEAD) can only be answered once the body is complete.
      if (r.method === 'HEAD' || r.headers.range !== undefined) {
        if (!(await fill.done)) throw ociError(502, 'DIGEST_INVALID', 'blob failed verification');
        size = fill.spool.written;
      } else return { status: 200, headers: base, body: fill.spool.reader(0) };
    }
    const a = this.span(r, base, etag, size);
    if (a.done) return a.done;
    if (r.method === 'HEAD') return { ...a.head, body: null, text: Buffer.alloc(0) };
    return { ...a.head, body: fill.spool.reader(a.start, a.end) };
  }

  /** Status, headers and byte span of an answer for a body of `size` bytes (or a finished 416). */
  private span(r: BlobRequest, base: Record<string, string>, etag: string, size: number) {
    const range = rangeOf(r.method, r.headers, { etag, lastModified: null }, size);
    if (range.kind === 'unsatisfiable')
      return {
        done: {
          status: 416,
          headers: { 'content-range': contentRange(null, size) },
          body: null,
          text: Buffer.alloc(0),
        },
      };
    const one = range.kind === 'single' ? range : { start: 0, end: size - 1 };
    const headers = { ...base, 'content-length': String(one.end - one.start + 1) };
    if (range.kind === 'single')
      return {
        start: one.start,
        end: one.end,
        head: { status: 206, headers: { ...headers, 'content-range': contentRange(one, size) } },
      };
    return { start: one.start, end: one.end, head: { status: 200, headers } };
  }

  private async head(name: ImageName, digest: Digest, base: Record<string, string>): Promise<BlobAnswer> {
    const res = await this.up.request(name, 'HEAD', `blobs/${digest.text}`, {});
    res.body.resume();
    if (res.status !== 200) throw upstreamRefusal(res.status, res.headers, `blob ${digest.text}`);
    const len = res.headers['content-length'];
    return {
      status: 200,
      headers: { ...base, ...(len ? { 'content-length': len } : {}) },
      body: null,
      text: Buffer.alloc(0),
    };
  }

  /**
   * Starts the one upstream fetch of a blob. Resolves once the registry answered 200 and the spool
   * exists; the body then flows on its own, whoever reads it (a client that leaves does not stop it).
   */
  private async start(key: string, name: ImageName, digest: Digest): Promise<Fill> {
    const what = `blob ${digest.text}`;
    const res = await this.up.request(name, 'GET', `blobs/${digest.text}`, {});
    if (res.status !== 200) {
      res.body.resume();
      throw upstreamRefusal(res.status, res.headers, what);
    }
    const stated = res.headers['content-length'];
    const size = stated !== undefined && /^\d+$/.test(stated) ? Number(stated) : null;
    if (size !== null && size > this.maxBytes) {
      res.body.destroy();
      throw ociError(413, 'SIZE_INVALID', `${what} exceeds ${humanBytes(this.maxBytes)}`);
    }
    const path = (await this.store?.tempFile()) ?? join(this.spoolDir, randomUUID());
    let spool: Spool;
    try {
      spool = await Spool.create(path, { size });
    } catch (err) {
      res.body.destroy();
      throw err;
    }
    this.fetches++;
    const done = this.pump(key, name, digest, res.body, spool, size);
    return { spool, size, done };
  }

  /** Copies the body into the spool while hashing it; seals and caches it, or fails it. */
  private async pump(
    key: string,
    name: ImageName,
    digest: Digest,
    body: Readable,
    spool: Spool,
    size: number | null,
  ): Promise<boolean> {
    const hash = createHash(digest.algorithm);
    let problem: string | null = null;
    // Bytes received (the spool's `written` counts only those already in the file).
    let got = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        got += chunk.length;
        if (got > (size ?? this.maxBytes)) {
          problem =
            size === null ? `longer than ${humanBytes(this.maxBytes)}` : 'longer than its stated length';
          body.destroy();
          break;
        }
        // Queued first: a client that keeps up gets the chunk from memory while it is hashed.
        const appended = spool.append(chunk);
        hash.update(chunk);
        await appended;
      }
      if (!problem) await spool.drain();
      if (!problem && size !== null && spool.written !== size)
        problem = `cut short at ${spool.written} of ${size} bytes`;
      if (!problem && hash.digest('hex') !== digest.hex) problem = 'does not match its digest';
    } catch (err) {
      problem = `transfer failed: ${(err as Error).message}`;
    }
    if (problem) {
      this.log.warn(
        { registry: name.registry, repo: name.repo, digest: digest.text, reason: problem },
        'oci blob refused',
      );
      spool.fail(ociError(502, 'DIGEST_INVALID', `blob ${digest.text} from the registry ${problem}`));
      this.fills.delete(key);
      spool.done();
      await spool.remove();
      return false;
    }
    spool.seal();
    // Still handed to clients from the spool until the cache has it; then from the cache.
    const kept = this.store ? await this.store.adopt(key, spool.path, spool.written, { headers: {} }) : false;
    this.fills.delete(key);
    spool.done();
    if (!kept) await spool.remove();
    return true;
  }
}
