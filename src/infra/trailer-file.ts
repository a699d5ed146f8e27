// The on-disk shape of cache entries (and of blobs written before the blob store kept bodies in
// files of their own): body bytes, a JSON trailer, its u32 length and a 4-byte magic. The body
// starts at offset 0 (ranges are plain file offsets) and the trailer is written last, so a file
// cut short anywhere fails the magic and length checks.
import type { FileHandle } from 'node:fs/promises';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

const TAIL = 8; // u32 trailer length + magic
const MAX_TRAILER = 64 * 1024;

export function isErr(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === code;
}

/** The bytes that follow a body: JSON, its length, the magic. Throws past MAX_TRAILER. */
export function trailerBytes(magic: Buffer, value: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(value));
  if (json.length > MAX_TRAILER) throw new Error('metadata too large');
  const tail = Buffer.alloc(TAIL);
  tail.writeUInt32BE(json.length, 0);
  magic.copy(tail, 4);
  return Buffer.concat([json, tail]);
}

function trailerLength(magic: Buffer, tail: Buffer, fileSize: number): number | null {
  const len = tail.readUInt32BE(0);
  if (!tail.subarray(4).equals(magic) || len > MAX_TRAILER || len > fileSize - TAIL) return null;
  return len;
}

/** Reads the trailer through an open handle; null when the file is not one of ours or torn. */
export async function readTrailer(
  fh: FileHandle,
  magic: Buffer,
): Promise<{ bodySize: number; value: unknown } | null> {
  const st = await fh.stat();
  if (st.size < TAIL) return null;
  const tail = Buffer.alloc(TAIL);
  await fh.read(tail, 0, TAIL, st.size - TAIL);
  const len = trailerLength(magic, tail, st.size);
  if (len === null) return null;
  const json = Buffer.alloc(len);
  await fh.read(json, 0, len, st.size - TAIL - len);
  try {
    return { bodySize: st.size - TAIL - len, value: JSON.parse(json.toString('utf8')) };
  } catch {
    return null;
  }
}

/** Splits a whole file read into memory; null when it is not one of ours or torn. */
export function splitTrailer(file: Buffer, magic: Buffer): { body: Buffer; value: unknown } | null {
  if (file.length < TAIL) return null;
  const len = trailerLength(magic, file.subarray(file.length - TAIL), file.length);
  if (len === null) return null;
  const end = file.length - TAIL - len;
  try {
    return { body: file.subarray(0, end), value: JSON.parse(file.subarray(end, end + len).toString('utf8')) };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return isErr(err, 'EPERM');
  }
}

/**
 * Removes temporary files (named `<pid>-...`) left by dead writers (crash, kill -9). Those of live
 * processes, this one included, stay unless older than `staleMs` (a wedged writer): several
 * processes (cluster workers) may share one directory.
 */
export async function sweepTemp(dir: string, staleMs: number): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [])) {
    const pid = Number(name.split('-')[0]);
    const path = join(dir, name);
    const st = await stat(path).catch(() => null);
    if (!st) continue;
    const stale = Date.now() - st.mtimeMs > staleMs;
    if (pid === process.pid && !stale) continue;
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) && !stale) continue;
    await unlink(path).catch(() => {});
    removed++;
  }
  return removed;
}
