// Every diagram language of the Kroki API, one line each: which engine renders it, the output
// formats Kroki offers for it (PNG is rasterised from our SVG in process where Kroki offers PNG),
// the diagram options it reads and a small sample (the editor, /health and the tests use it).
// `plantuml` languages go to the warm JVM pool; `thread` ones to an engine module of ../engines/
// in a worker thread; `command` ones to a system program detected at start.

export type EngineKind = 'plantuml' | 'thread' | 'command';

export interface Language {
  /** Kroki's diagram type, the first path segment. */
  readonly type: string;
  readonly kind: EngineKind;
  /** thread: the module in ../engines/; command: the program; plantuml: the @start word. */
  readonly engine: string;
  /** Output formats in Kroki's order (the first is the default of the editor). */
  readonly formats: readonly string[];
  /** Diagram options (Kroki-Diagram-Options-*, query, diagram_options) this engine reads. */
  readonly options?: readonly string[];
  /** npm package the thread engine needs (optional dependency). */
  readonly pkg?: string;
  /** A small diagram whose labels show up in the SVG. */
  readonly sample: string;
  /** A label of the sample that the rendered SVG contains. */
  readonly label: string;
}

const PUML_FORMATS = ['svg', 'png', 'txt', 'utxt', 'pdf', 'base64'] as const;

export const LANGUAGES: readonly Language[] = [
  {
    type: 'plantuml',
    kind: 'plantuml',
    engine: 'uml',
    formats: PUML_FORMATS,
    options: ['theme'],
    sample: 'Alice -> Bob : hello\nBob --> Alice : hi!',
    label: 'hello',
  },
  {
    type: 'c4plantuml',
    kind: 'plantuml',
    engine: 'uml',
    formats: PUML_FORMATS,
    options: ['theme'],
    sample:
      '!include <C4/C4_Container>\nPerson(user, "Customer")\nSystem(shop, "Webshop")\nRel(user, shop, "Buys in")',
    label: 'Webshop',
  },
  {
    type: 'ditaa',
    kind: 'plantuml',
    engine: 'ditaa',
    // PlantUML's ditaa draws PNG only (asked for SVG it still answers PNG); Kroki also offers svg.
    formats: ['png'],
    sample: '+--------+   +-------+\n| client |-->| devutil |\n+--------+   +-------+',
    label: 'client',
  },
  {
    type: 'graphviz',
    kind: 'thread',
    engine: 'graphviz',
    pkg: '@viz-js/viz',
    formats: ['svg', 'png', 'jpeg'],
    options: ['layout'],
    sample: 'digraph G {\n  rankdir=LR\n  client -> devutil [label="GET /graphviz"]\n  devutil -> cache\n}',
    label: 'devutil',
  },
  {
    type: 'dot',
    kind: 'thread',
    engine: 'graphviz',
    pkg: '@viz-js/viz',
    formats: ['svg', 'png', 'jpeg'],
    options: ['layout'],
    sample: 'digraph { hello -> world }',
    label: 'world',
  },
];

const byType = new Map(LANGUAGES.map((l) => [l.type, l]));

export function languageOf(type: string): Language | undefined {
  return byType.get(type.toLowerCase());
}

export function typeList(): string {
  return LANGUAGES.map((l) => l.type).join(', ');
}

/** Kroki's other types, which devutil does not render, and why (listed by /health). */
export const NOT_SERVED: Readonly<Record<string, string>> = {};
