// The on-disk shape of blobs written before the blob store kept bodies in files of their own (read
// only now): body bytes, a JSON trailer, its u32 length and a 4-byte magic; a file cut short
// anywhere fails the magic and length checks. Also the temporary-file sweep the blob store and the
// cache share.
import type { FileHandle } from 'node:fs/promises';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

const TAIL = 8; // u32 trailer length + magic
const MAX_TRAILER = 64 * 1024;

export function isErr(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === code;
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

/** A process with this pid exists (another user's counts): a writer that may still be working. */
export function alive(pid: number): boolean {
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
