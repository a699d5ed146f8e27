// Nomnoml (MIT): UML-ish boxes and arrows, laid out by graphre in pure JavaScript.
import { DiagramError, lineOf } from './diagram-error.ts';

let mod: Promise<typeof import('nomnoml')> | undefined;

export async function warm(): Promise<void> {
  mod ??= import('nomnoml');
  await mod;
}

export async function render(source: string): Promise<string> {
  await warm();
  const n = await mod!;
  try {
    return n.renderSvg(source);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
}
