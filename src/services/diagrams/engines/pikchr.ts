// Pikchr (BSD, by D. Richard Hipp) in WebAssembly (pikchr-wasm, MIT). A source it cannot parse
// comes back as an error listing instead of SVG.
import { DiagramError, lineOf } from './diagram-error.ts';

type Pikchr = { loadWASM(): Promise<void>; render(markup: string): string };
let mod: Promise<Pikchr> | undefined;

export async function warm(): Promise<void> {
  mod ??= import('pikchr-wasm').then(async (m) => {
    const p = (m.default ?? m) as unknown as Pikchr;
    await p.loadWASM();
    return p;
  });
  await mod;
}

export async function render(source: string): Promise<string> {
  await warm();
  const p = await mod!;
  const out = p.render(source);
  if (!out.trimStart().startsWith('<svg')) {
    const text = out
      .replace(/<[^>]+>/g, '')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&')
      .trim();
    const err = /ERROR:\s*(.*)/.exec(text)?.[1] ?? 'Pikchr could not parse this diagram';
    // The listing numbers the source lines ("/*    3 */ ..."); the error marker follows the bad line.
    const before = text.slice(0, text.indexOf('ERROR:'));
    const nums = [...before.matchAll(/^\/\*\s*(\d+)\s*\*\//gm)];
    const line = nums.length ? Number(nums.at(-1)?.[1]) : lineOf(err);
    throw new DiagramError(err, line);
  }
  return out;
}
