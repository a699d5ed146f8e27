// Every diagram language of the Kroki API, one line each: which engine renders it, the output
// formats Kroki offers for it (PNG is rasterised from our SVG in process where Kroki offers PNG),
// the diagram options it reads and a small sample (the editor, /health and the tests use it).
// `plantuml` languages go to the warm JVM pool; `thread` ones to an engine module of ../engines/
// in a worker thread; `command` ones to a system program detected at start.

export type EngineKind = 'plantuml' | 'thread' | 'command';

export interface Language {
  /** Kroki's diagram type, the first path segment. */
  readonly type: string;
  /** What people call it: the editor's language picker shows this, not the type. */
  readonly name: string;
  readonly kind: EngineKind;
  /** thread: the module in ../engines/; command: the program; plantuml: the @start word. */
  readonly engine: string;
  /** Output formats in Kroki's order (the first is the default of the editor). */
  readonly formats: readonly string[];
  /** Diagram options (Kroki-Diagram-Options-*, query, diagram_options) this engine reads. */
  readonly options?: readonly string[];
  /** Options always passed (Vega-Lite is the Vega engine with lite=true). */
  readonly preset?: Readonly<Record<string, string>>;
  /** npm package the thread engine needs (optional dependency). */
  readonly pkg?: string;
  /** A thread engine built into devutil instead (no package): its version (cache keys, /health). */
  readonly version?: string;
  /** A small diagram whose labels show up in the SVG. */
  readonly sample: string;
  /** A label of the sample that the rendered SVG contains. */
  readonly label: string;
}

const PUML_FORMATS = ['svg', 'png', 'txt', 'utxt', 'pdf', 'base64'] as const;

export const LANGUAGES: readonly Language[] = [
  {
    type: 'plantuml',
    name: 'PlantUML',
    kind: 'plantuml',
    engine: 'uml',
    formats: PUML_FORMATS,
    options: ['theme'],
    sample: 'Alice -> Bob : hello\nBob --> Alice : hi!',
    label: 'hello',
  },
  {
    type: 'c4plantuml',
    name: 'C4 model (PlantUML)',
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
    name: 'Ditaa (ASCII art)',
    kind: 'plantuml',
    engine: 'ditaa',
    // PlantUML's ditaa draws PNG only (asked for SVG it still answers PNG); Kroki also offers svg.
    formats: ['png'],
    sample: '+--------+   +---------+\n| client |-->| devutil |\n+--------+   +---------+',
    label: 'client',
  },
  {
    type: 'graphviz',
    name: 'Graphviz',
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
    name: 'Graphviz (as dot)',
    kind: 'thread',
    engine: 'graphviz',
    pkg: '@viz-js/viz',
    formats: ['svg', 'png', 'jpeg'],
    options: ['layout'],
    sample: 'digraph { hello -> world }',
    label: 'world',
  },
  {
    type: 'mermaid',
    name: 'Mermaid',
    kind: 'thread',
    engine: 'mermaid',
    pkg: 'beautiful-mermaid',
    formats: ['svg', 'png'],
    sample: 'graph LR\n  client[Browser] -->|GET /mermaid| devutil\n  devutil --> cache[(Cache)]',
    label: 'devutil',
  },
  {
    type: 'd2',
    name: 'D2',
    kind: 'thread',
    engine: 'd2',
    pkg: '@terrastruct/d2',
    formats: ['svg'],
    options: ['theme', 'sketch', 'layout'],
    sample: 'client -> devutil: GET /d2\ndevutil -> cache',
    label: 'devutil',
  },
  {
    type: 'nomnoml',
    name: 'nomnoml',
    kind: 'thread',
    engine: 'nomnoml',
    pkg: 'nomnoml',
    formats: ['svg'],
    sample: '[Client]->[devutil]\n[devutil]->[<database> Cache]',
    label: 'devutil',
  },
  {
    type: 'wavedrom',
    name: 'WaveDrom',
    kind: 'thread',
    engine: 'wavedrom',
    pkg: 'wavedrom',
    formats: ['svg'],
    sample:
      '{ signal: [\n  { name: "clk", wave: "p......" },\n  { name: "data", wave: "x.345x.", data: ["head", "body", "tail"] }\n] }',
    label: 'body',
  },
  {
    type: 'vega',
    name: 'Vega',
    kind: 'thread',
    engine: 'vega',
    pkg: 'vega',
    formats: ['svg', 'png'],
    sample: JSON.stringify(
      {
        width: 200,
        height: 100,
        title: 'devutil renders',
        data: [
          {
            name: 't',
            values: [
              { k: 'svg', v: 28 },
              { k: 'png', v: 55 },
            ],
          },
        ],
        scales: [
          { name: 'x', type: 'band', domain: { data: 't', field: 'k' }, range: 'width', padding: 0.1 },
          { name: 'y', domain: { data: 't', field: 'v' }, range: 'height' },
        ],
        axes: [{ orient: 'bottom', scale: 'x' }],
        marks: [
          {
            type: 'rect',
            from: { data: 't' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'k' },
                width: { scale: 'x', band: 1 },
                y: { scale: 'y', field: 'v' },
                y2: { scale: 'y', value: 0 },
              },
            },
          },
        ],
      },
      null,
      1,
    ),
    label: 'devutil renders',
  },
  {
    type: 'vegalite',
    name: 'Vega-Lite',
    kind: 'thread',
    engine: 'vega',
    pkg: 'vega-lite',
    preset: { lite: 'true' },
    formats: ['svg', 'png'],
    sample: JSON.stringify(
      {
        title: 'devutil renders',
        data: {
          values: [
            { k: 'svg', v: 28 },
            { k: 'png', v: 55 },
          ],
        },
        mark: 'bar',
        encoding: { x: { field: 'k', type: 'nominal' }, y: { field: 'v', type: 'quantitative' } },
      },
      null,
      1,
    ),
    label: 'devutil renders',
  },
  {
    type: 'bytefield',
    name: 'Bytefield',
    kind: 'thread',
    engine: 'bytefield',
    pkg: 'bytefield-svg',
    formats: ['svg'],
    sample: '(draw-column-headers)\n(draw-box "Address" {:span 4})\n(draw-box "Payload" {:span 12})',
    label: 'Payload',
  },
  {
    type: 'dbml',
    name: 'DBML',
    kind: 'thread',
    engine: 'dbml',
    pkg: '@softwaretechnik/dbml-renderer',
    formats: ['svg'],
    sample:
      'Table users {\n  id integer [pk]\n  name varchar\n}\nTable posts {\n  id integer [pk]\n  user_id integer [ref: > users.id]\n}',
    label: 'posts',
  },
  {
    type: 'pikchr',
    name: 'Pikchr',
    kind: 'thread',
    engine: 'pikchr',
    version: '1.0 20260102012653', // engines/pikchr-build.sh's build; its engine test compares
    formats: ['svg'],
    sample: 'box "devutil" fit\narrow\ncylinder "cache" fit',
    label: 'devutil',
  },
  {
    type: 'svgbob',
    name: 'Svgbob',
    kind: 'thread',
    engine: 'svgbob',
    pkg: 'svgbob-wasm',
    formats: ['svg'],
    sample: '+--------+      +---------+\n| client |----->| devutil |\n+--------+      +---------+',
    label: 'devutil',
  },
  {
    type: 'erd',
    name: 'Erd (entity-relationship)',
    kind: 'thread',
    engine: 'erd',
    pkg: '@viz-js/viz',
    formats: ['svg', 'png', 'jpeg'],
    sample:
      '[Person]\n*name\nheight\n+birth_place_id\n\n[Location]\n*id\ncity\ncountry\n\nPerson *--1 Location {label: "born in"}',
    label: 'birth_place_id',
  },
  {
    type: 'excalidraw',
    name: 'Excalidraw',
    kind: 'thread',
    engine: 'excalidraw',
    pkg: 'roughjs',
    formats: ['svg', 'png'],
    sample: JSON.stringify(
      {
        type: 'excalidraw',
        version: 2,
        elements: [
          { type: 'rectangle', x: 0, y: 0, width: 140, height: 60, seed: 1, roundness: { type: 3 } },
          {
            type: 'text',
            x: 10,
            y: 18,
            width: 120,
            height: 25,
            text: 'devutil',
            textAlign: 'center',
            seed: 2,
          },
          {
            type: 'arrow',
            x: 140,
            y: 30,
            width: 100,
            height: 0,
            points: [
              [0, 0],
              [100, 0],
            ],
            seed: 3,
          },
          {
            type: 'ellipse',
            x: 240,
            y: 0,
            width: 120,
            height: 60,
            backgroundColor: '#a5d8ff',
            fillStyle: 'hachure',
            seed: 4,
          },
          {
            type: 'text',
            x: 250,
            y: 18,
            width: 100,
            height: 25,
            text: 'cache',
            textAlign: 'center',
            seed: 5,
          },
        ],
      },
      null,
      1,
    ),
    label: 'devutil',
  },
  {
    type: 'bpmn',
    name: 'BPMN',
    // Drawn by bpmn-js in the headless-browser pool (renderer.ts), not in a render process.
    kind: 'thread',
    engine: 'bpmn',
    pkg: 'bpmn-js',
    formats: ['svg'],
    sample: [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" id="d" targetNamespace="http://bpmn.io/schema/bpmn">',
      '  <process id="p">',
      '    <startEvent id="start" />',
      '    <task id="render" name="devutil" />',
      '    <endEvent id="end" />',
      '    <sequenceFlow id="f1" sourceRef="start" targetRef="render" />',
      '    <sequenceFlow id="f2" sourceRef="render" targetRef="end" />',
      '  </process>',
      '  <bpmndi:BPMNDiagram id="dia">',
      '    <bpmndi:BPMNPlane id="plane" bpmnElement="p">',
      '      <bpmndi:BPMNShape id="start_di" bpmnElement="start"><dc:Bounds x="100" y="100" width="36" height="36" /></bpmndi:BPMNShape>',
      '      <bpmndi:BPMNShape id="render_di" bpmnElement="render"><dc:Bounds x="190" y="78" width="100" height="80" /></bpmndi:BPMNShape>',
      '      <bpmndi:BPMNShape id="end_di" bpmnElement="end"><dc:Bounds x="350" y="100" width="36" height="36" /></bpmndi:BPMNShape>',
      '      <bpmndi:BPMNEdge id="f1_di" bpmnElement="f1"><di:waypoint x="136" y="118" /><di:waypoint x="190" y="118" /></bpmndi:BPMNEdge>',
      '      <bpmndi:BPMNEdge id="f2_di" bpmnElement="f2"><di:waypoint x="290" y="118" /><di:waypoint x="350" y="118" /></bpmndi:BPMNEdge>',
      '    </bpmndi:BPMNPlane>',
      '  </bpmndi:BPMNDiagram>',
      '</definitions>',
    ].join('\n'),
    label: 'devutil',
  },
  {
    type: 'blockdiag',
    name: 'BlockDiag (block diagrams)',
    kind: 'command',
    engine: 'blockdiag',
    formats: ['svg', 'png'],
    sample: 'blockdiag {\n  client -> devutil -> cache;\n}',
    label: 'devutil',
  },
  {
    type: 'seqdiag',
    name: 'SeqDiag (sequence diagrams)',
    kind: 'command',
    engine: 'seqdiag',
    formats: ['svg', 'png'],
    sample:
      'seqdiag {\n  browser -> devutil [label = "GET /seqdiag"];\n  browser <- devutil [label = "svg"];\n}',
    label: 'devutil',
  },
  {
    type: 'actdiag',
    name: 'ActDiag (activity diagrams)',
    kind: 'command',
    engine: 'actdiag',
    formats: ['svg', 'png'],
    sample:
      'actdiag {\n  write -> render -> read\n  lane author {\n    write; read\n  }\n  lane devutil {\n    render\n  }\n}',
    label: 'render',
  },
  {
    type: 'nwdiag',
    name: 'NwDiag (network diagrams)',
    kind: 'command',
    engine: 'nwdiag',
    formats: ['svg', 'png'],
    sample:
      'nwdiag {\n  network dmz {\n    address = "210.x.x.x/24"\n    devutil [address = "210.x.x.1"];\n  }\n}',
    label: 'devutil',
  },
  {
    type: 'packetdiag',
    name: 'PacketDiag (packet headers)',
    kind: 'command',
    engine: 'packetdiag',
    formats: ['svg', 'png'],
    sample: 'packetdiag {\n  colwidth = 32\n  0-15: Source\n  16-31: Destination\n}',
    label: 'Destination',
  },
  {
    type: 'rackdiag',
    name: 'RackDiag (rack layouts)',
    kind: 'command',
    engine: 'rackdiag',
    formats: ['svg', 'png'],
    sample: 'rackdiag {\n  8U;\n  1: devutil\n  2: Cache\n}',
    label: 'devutil',
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
export const NOT_SERVED: Readonly<Record<string, string>> = {
  diagramsnet: 'not rendered by devutil: diagrams.net draws in a browser',
  structurizr: 'not rendered by devutil: Structurizr is a Java library outside PlantUML',
  umlet: 'not rendered by devutil: UMLet is a Java program with no package here',
  symbolator: 'not rendered by devutil: Symbolator is a Python program with no Debian package',
  tikz: 'not rendered by devutil: TikZ needs a TeX installation',
  wireviz: 'not rendered by devutil: WireViz is a Python program with no Debian package',
  goat: 'not rendered by devutil: GoAT is a Go program with no package here',
};
