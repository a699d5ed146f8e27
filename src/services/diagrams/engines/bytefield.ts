// Bytefield (EPL-2.0, bytefield-svg): byte-field diagrams from its Clojure-like DSL, interpreted
// (SCI), not evaluated by Node.
import { DiagramError, lineOf } from './diagram-error.ts';

let mod: Promise<(source: string) => string> | undefined;

export async function warm(): Promise<void> {
  mod ??= import('bytefield-svg').then((m) => m.default);
  await mod;
}

export async function render(source: string): Promise<string> {
  await warm();
  const generate = await mod!;
  try {
    return generate(source);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new DiagramError(msg, lineOf(msg));
  }
}
