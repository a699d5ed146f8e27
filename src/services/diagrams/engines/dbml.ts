// DBML (database markup) to SVG with @softwaretechnik/dbml-renderer (ISC), which lays out through
// its own Graphviz WASM build.
import { DiagramError, lineOf } from './diagram-error.ts';

let mod: Promise<(input: string, format: 'svg') => string> | undefined;

export async function warm(): Promise<void> {
  mod ??= import('@softwaretechnik/dbml-renderer').then((m) => (m.run ?? m.default?.run) as never);
  await mod;
}

export async function render(source: string): Promise<string> {
  await warm();
  const run = await mod!;
  try {
    return run(source, 'svg');
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
}
