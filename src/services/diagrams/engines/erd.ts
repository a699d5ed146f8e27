// erd (entity-relationship diagrams): translated to DOT (erd-dot.ts) and laid out by the Graphviz
// engine of this same render process, as the original erd program hands its graph to Graphviz.
import { erdToDot } from './erd-dot.ts';
import * as graphviz from './graphviz.ts';

export const warm = graphviz.warm;

export function render(source: string): Promise<string> {
  return graphviz.render(erdToDot(source), 'svg', {});
}
