// Pikchr (0BSD, by D. Richard Hipp) in WebAssembly, built from Pikchr's current source by
// pikchr-build.sh (the pikchr-wasm package carries an older Pikchr without `diamond`). The module imports
// four WASI calls, none of which reaches the host here. A source it cannot parse comes back as a
// plain-text listing with the error under the bad line.
import { readFile } from 'node:fs/promises';
import { DiagramError, lineOf } from './diagram-error.ts';

interface Exports {
  memory: WebAssembly.Memory;
  malloc(n: number): number;
  free(p: number): void;
  pikchr(text: number, cls: number, flags: number, width: number, height: number): number;
  pikchr_version(): number;
}

const PLAINTEXT_ERRORS = 1;
const WASM = new URL('./pikchr.wasm', import.meta.url);
/** wasi_snapshot_preview1 as pikchr.c uses it: its stdio is never written to; exit is a failure. */
const WASI = {
  fd_close: () => 0,
  fd_seek: () => 70, // ESPIPE
  fd_write: () => 8, // EBADF
  proc_exit: (code: number) => {
    throw new Error(`Pikchr exited (${code})`);
  },
};

let mod: Promise<Exports> | undefined;

export async function warm(): Promise<void> {
  mod ??= readFile(WASM).then(async (bytes) => {
    const { instance } = await WebAssembly.instantiate(bytes, { wasi_snapshot_preview1: WASI });
    return instance.exports as unknown as Exports;
  });
  await mod;
}

function cString(e: Exports, p: number): string {
  const m = new Uint8Array(e.memory.buffer);
  const end = m.indexOf(0, p);
  return Buffer.from(m.subarray(p, end < 0 ? m.length : end)).toString('utf8');
}

/** Pikchr's version and check-in date ("1.0 20260102012653"). */
export async function version(): Promise<string> {
  await warm();
  const e = await mod!;
  return cString(e, e.pikchr_version());
}

function run(e: Exports, source: string): { out: string; ok: boolean } {
  const text = Buffer.from(`${source}\0`, 'utf8');
  const src = e.malloc(text.length);
  const size = e.malloc(8);
  if (!src || !size) throw new Error('Pikchr ran out of memory');
  new Uint8Array(e.memory.buffer).set(text, src);
  const res = e.pikchr(src, 0, PLAINTEXT_ERRORS, size, size + 4);
  try {
    if (!res) throw new Error('Pikchr ran out of memory');
    return { out: cString(e, res), ok: new DataView(e.memory.buffer).getInt32(size, true) >= 0 };
  } finally {
    e.free(res);
    e.free(src);
    e.free(size);
  }
}

export async function render(source: string): Promise<string> {
  await warm();
  let r: { out: string; ok: boolean };
  try {
    r = run(await mod!, source);
  } catch (err) {
    mod = undefined; // a trapped instance is not reused
    throw err;
  }
  if (r.ok) return r.out;
  const err = /ERROR:\s*(.*)/.exec(r.out)?.[1]?.trim() || 'Pikchr could not parse this diagram';
  // The listing numbers the source lines ("/*    3 */ ..."); the error marker follows the bad line.
  const nums = [...r.out.slice(0, r.out.indexOf('ERROR:')).matchAll(/^\/\*\s*(\d+)\s*\*\//gm)];
  throw new DiagramError(err, nums.length ? Number(nums.at(-1)?.[1]) : lineOf(err));
}
