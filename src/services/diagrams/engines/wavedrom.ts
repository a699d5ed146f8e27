// WaveDrom (MIT): digital timing diagrams and bit fields. The source is a JavaScript object
// literal; it is parsed as JSON5, never evaluated.
import { DiagramError, lineOf } from './diagram-error.ts';

interface WaveDrom {
  renderAny(index: number, source: unknown, skin: unknown): unknown;
  onml: { stringify(tree: unknown): string };
}
let mod: Promise<[WaveDrom, { parse(s: string): unknown }, unknown]> | undefined;

export async function warm(): Promise<void> {
  mod ??= Promise.all([
    import('wavedrom').then((m) => m.default as WaveDrom),
    import('json5').then((m) => m.default),
    import('wavedrom/skins/default.js').then((m) => m.default),
  ]);
  await mod;
}

export async function render(source: string): Promise<string> {
  await warm();
  const [w, json5, skin] = await mod!;
  let spec: unknown;
  try {
    spec = json5.parse(source);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
  if (!spec || typeof spec !== 'object')
    throw new DiagramError('expected a WaveDrom object { signal: [...] }');
  try {
    return w.onml.stringify(w.renderAny(0, spec, skin));
  } catch (err) {
    throw new DiagramError(err instanceof Error ? err.message : String(err));
  }
}
