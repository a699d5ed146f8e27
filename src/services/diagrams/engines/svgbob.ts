// Svgbob (Apache-2.0): ASCII art to SVG, the Rust library built to WebAssembly (svgbob-wasm). The
// package's own glue is written for bundlers (it imports the .wasm file as a module), so the module
// is instantiated here: it imports nothing, exports render() and its allocator.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

interface Exports {
  memory: WebAssembly.Memory;
  render(ret: number, ptr: number, len: number): void;
  __wbindgen_add_to_stack_pointer(n: number): number;
  __wbindgen_malloc(n: number): number;
  __wbindgen_free(ptr: number, len: number): void;
}
let wasm: Promise<Exports> | undefined;

async function load(): Promise<Exports> {
  const file = fileURLToPath(new URL('svgbob_wasm_bg.wasm', import.meta.resolve('svgbob-wasm/package.json')));
  const { instance } = await WebAssembly.instantiate(await readFile(file), {});
  return instance.exports as unknown as Exports;
}

export async function warm(): Promise<void> {
  wasm ??= load();
  await wasm;
}

export async function render(source: string): Promise<string> {
  await warm();
  const w = await wasm!;
  const input = new TextEncoder().encode(source);
  const ptr = w.__wbindgen_malloc(input.length);
  new Uint8Array(w.memory.buffer, ptr, input.length).set(input);
  const ret = w.__wbindgen_add_to_stack_pointer(-16);
  try {
    w.render(ret, ptr, input.length);
    const [outPtr = 0, outLen = 0] = new Int32Array(w.memory.buffer, ret, 2);
    const svg = new TextDecoder().decode(new Uint8Array(w.memory.buffer, outPtr, outLen));
    w.__wbindgen_free(outPtr, outLen);
    return svg;
  } finally {
    w.__wbindgen_add_to_stack_pointer(16);
  }
}
