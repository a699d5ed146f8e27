// Streams a zip archive of stored files (yazl): each entry is opened only when the archive reaches
// it and flows through as it is read, so no file is ever held in memory; ZIP64 records are written
// when an entry, an offset or the entry count passes what the classic format holds.
import { PassThrough, type Readable } from 'node:stream';
import { ZipFile } from 'yazl';

export interface ZipEntry {
  /** The name in the archive (a plain file name: zipEntryNames makes them safe and distinct). */
  name: string;
  /** Exact length of the bytes open() gives: checked while writing, and with stored entries it
   * makes the archive's length known before the first byte. */
  size: number;
  mtime: Date;
  /** Deflate this entry (its bytes are known to compress), else store it as is. */
  deflate: boolean;
  open(): Promise<Readable>;
}

export interface ZipOutput {
  stream: Readable;
  /** The archive's exact length when every entry is stored (no deflate); null otherwise. */
  length: number | null;
}

/**
 * The archive of `entries`, in order. A failure to open or read an entry destroys the stream, so
 * the client sees a cut transfer (and unzip a broken archive), never a complete-looking one.
 */
export function zipStream(entries: readonly ZipEntry[], level: number): Promise<ZipOutput> {
  const zip = new ZipFile();
  const out = new PassThrough({ highWaterMark: 256 * 1024 });
  zip.on('error', (err: Error) => out.destroy(err));
  zip.outputStream.on('error', (err: Error) => out.destroy(err));
  zip.outputStream.pipe(out);
  for (const e of entries) {
    zip.addReadStreamLazy(
      e.name,
      {
        mtime: e.mtime,
        mode: 0o100644,
        compress: e.deflate,
        ...(e.deflate ? { compressionLevel: level } : {}),
        size: e.size,
      },
      (cb) => {
        e.open().then(
          (s) => cb(null, s),
          (err: unknown) => cb(err instanceof Error ? err : new Error(String(err)), null as never),
        );
      },
    );
  }
  // @types/yazl leaves out the total the callback is given (-1 when deflate makes it unknown).
  const end = zip.end.bind(zip) as unknown as (o: object, cb: (total: number) => void) => void;
  return new Promise((resolve) => {
    end({}, (total) => resolve({ stream: out, length: total >= 0 ? total : null }));
  });
}

/** Characters no archive name keeps: path separators, controls, and what Windows refuses. */
const UNSAFE = /[/\\\u0000-\u001f\u007f:*?"<>|]/g;

/**
 * Archive names from file names: never a path (no separator, no "." or ".." entry, so extracting
 * cannot leave the target directory), and distinct without regard to case, as Windows and macOS
 * extract them: a second "notes.txt" becomes "notes (2).txt".
 */
export function zipEntryNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((raw) => {
    let name = raw.replace(UNSAFE, '_').trim();
    if (name === '' || /^\.+$/.test(name)) name = 'file';
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    let candidate = name;
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${ext}`;
    taken.add(candidate.toLowerCase());
    return candidate;
  });
}
