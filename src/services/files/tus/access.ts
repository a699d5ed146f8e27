// What every tus handler needs around an upload: its state (404 when gone or expired), its lease
// (423 when another request holds it), quota reservations, the PATCH body under its bound, and
// the Tus-Resumable check.
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../../../config.ts';
import { AppError, notFound, tooLarge, unavailable } from '../../../infra/http/errors.ts';
import { QuotaFullError, type Reservation } from '../../../infra/limits/quota.ts';
import type { HeldLease, Leases } from '../../../infra/state/lease.ts';
import { type FileStore, insufficientStorage } from '../store.ts';
import { TUS_VERSION, UPLOAD_ID } from './protocol.ts';
import type { UploadState, UploadStore } from './uploads.ts';

export function requireTus(req: FastifyRequest): void {
  if (req.headers['tus-resumable'] !== TUS_VERSION)
    throw new AppError('TUS_VERSION', 412, `send Tus-Resumable: ${TUS_VERSION}`, {
      headers: { 'tus-version': TUS_VERSION },
    });
}

/**
 * The PATCH body as it arrives, at most `room` bytes, reserved against the quota as it comes; a
 * client that goes away ends it (what came is kept).
 */
export async function* received(
  raw: IncomingMessage,
  room: number,
  res: Reservation | null,
): AsyncGenerator<Buffer> {
  const it = raw[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let n = 0;
  let cut = false;
  for (;;) {
    let chunk: Buffer | null;
    if (cut) {
      // The connection was cut mid-body (tus 1.0: the server SHOULD keep the bytes it received).
      // The iterator gives up at once, but what the socket delivered before the cut may still wait
      // in the request's buffer (tens of KB when the disk is slower than the client): keep it too.
      chunk = raw.read() as Buffer | null;
      if (chunk === null) return;
    } else {
      let r: IteratorResult<Buffer>;
      try {
        r = await it.next();
      } catch {
        cut = true;
        continue;
      }
      if (r.done) return;
      chunk = r.value;
    }
    n += chunk.length;
    if (n > room) throw tooLarge('the body goes past Upload-Length', 'PAST_LENGTH');
    await res?.ensure(n);
    yield chunk;
  }
}

/** The uploads of one server, as the tus handlers reach them. */
export class TusAccess {
  readonly ttlMs: number;
  readonly cfg: Config['files'];
  readonly files: FileStore;
  readonly uploads: UploadStore;
  private readonly leases: Leases;
  private readonly lockOpts: { waitMs: number; ttlMs: number };
  constructor(cfg: Config['files'], files: FileStore, uploads: UploadStore, leases: Leases) {
    this.cfg = cfg;
    this.files = files;
    this.uploads = uploads;
    this.leases = leases;
    this.ttlMs = cfg.uploadExpirySec * 1000;
    this.lockOpts = { waitMs: cfg.uploadLockWaitMs, ttlMs: cfg.uploadLockTtlMs };
  }

  /** Upload-Expires of an upload in `s`'s state. */
  expires(s: UploadState): string {
    return new Date(s.lastWrite + this.ttlMs).toUTCString();
  }

  /** Upload-Expires of an upload written now. */
  expiresFromNow(): string {
    return new Date(this.files.now() + this.ttlMs).toUTCString();
  }

  async reserve(bytes: number): Promise<Reservation | null> {
    try {
      return this.files.quota ? await this.files.quota.reserve(bytes) : null;
    } catch (err) {
      throw err instanceof QuotaFullError ? insufficientStorage(this.cfg.quotaBytes) : err;
    }
  }

  /** 507 at creation when the whole upload could not fit now (the parts reserve for real). */
  async quotaCheck(length: number): Promise<void> {
    await (await this.reserve(length))?.release();
  }

  async load(id: string): Promise<UploadState> {
    const s = UPLOAD_ID.test(id) ? await this.uploads.state(id) : null;
    if (!s) throw notFound('no upload with this id');
    if (this.files.now() > s.lastWrite + this.ttlMs) {
      await this.uploads.remove(id);
      throw notFound('no upload with this id (expired)');
    }
    return s;
  }

  /**
   * Runs `fn` holding upload `id`'s lease (shared through Redis): 423 when another request keeps it.
   * `fn` gets the lease's signal: it aborts the moment the lease is lost, and writes stop with it.
   */
  async locked<T>(id: string, fn: (lease: AbortSignal) => Promise<T>): Promise<T> {
    if (!UPLOAD_ID.test(id)) throw notFound('no upload with this id');
    let held: HeldLease | null;
    try {
      held = await this.leases.acquire(`upload:${id}`, this.lockOpts);
    } catch (err) {
      throw unavailable('upload lock unavailable, try again shortly', 5, 'LOCK_UNAVAILABLE', { cause: err });
    }
    if (!held)
      throw new AppError('UPLOAD_LOCKED', 423, 'another request is using this upload; retry shortly', {
        headers: { 'retry-after': 1 },
      });
    try {
      return await fn(held.signal);
    } catch (err) {
      // Whatever failed after the lease was lost failed because of it: the client retries.
      if (held.signal.aborted && !(err instanceof AppError))
        throw unavailable('the upload lock was lost; retry', 1, 'LOCK_LOST', { cause: err });
      throw err;
    } finally {
      await held.release();
    }
  }
}
