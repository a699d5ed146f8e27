// The erd language (entity-relationship diagrams, as BurntSushi/erd reads them) translated to
// Graphviz DOT: each entity a table of its attributes (the primary key underlined, a foreign key
// in italics), each relationship an edge with the cardinality of both ends. Pure and linear: one
// pass over the lines, no recursion, so a stranger's source costs its length and nothing more;
// every value that reaches the DOT text is escaped or checked against a strict pattern first.
import { DiagramError } from './diagram-error.ts';

type Options = Record<string, string>;

interface Attribute {
  name: string;
  pk: boolean;
  fk: boolean;
  opts: Options;
}

interface Entity {
  name: string;
  opts: Options;
  attrs: Attribute[];
}

interface Relation {
  from: string;
  to: string;
  card1: string;
  card2: string;
  opts: Options;
  line: number;
}

/** erd's cardinalities: zero or one, exactly one, zero or more, one or more. */
const CARDINALITY: Readonly<Record<string, string>> = { '?': '0..1', '1': '1', '*': '0..N', '+': '1..N' };
const DIRECTIVES = new Set(['title', 'header', 'entity', 'relationship']);
/** Options erd knows; any other is a mistake worth naming. */
const KNOWN = new Set([
  'label',
  'color',
  'bgcolor',
  'size',
  'font',
  'border',
  'border-color',
  'cellspacing',
  'cellpadding',
  'text-alignment',
]);
/** A colour Graphviz reads: a name or #rgb[a]. */
const COLOR = /^(?:#[0-9a-f]{3,8}|[a-z][a-z0-9 ]{0,30})$/i;
const NUMBER = /^\d{1,3}(?:\.\d{1,3})?$/;
const FONT = /^[\w .,-]{1,60}$/;
const ALIGN = new Set(['left', 'center', 'right']);

/** A mistake on line `line` (1-based): 400 with the line. */
function fail(line: number, message: string): never {
  throw new DiagramError(`erd: line ${line}: ${message}`, line);
}

/** Reads a name: bare word, "double quoted" or `backquoted`. Returns it and the rest of the text. */
function readName(text: string, line: number): [string, string] {
  const q = text[0];
  if (q === '"' || q === '`') {
    const end = text.indexOf(q, 1);
    if (end < 0) fail(line, `unterminated ${q}quoted name`);
    const name = text.slice(1, end);
    if (!name) fail(line, 'an empty name');
    return [name, text.slice(end + 1).trimStart()];
  }
  const m = /^[^\s{}[\]"`#]+/.exec(text);
  if (!m) fail(line, `expected a name at "${text.slice(0, 20)}"`);
  return [m[0], text.slice(m[0].length).trimStart()];
}

/** Reads `{key: "value", ...}` (the whole rest of the line) or nothing. */
function readOptions(text: string, line: number): Options {
  const opts: Options = {};
  const rest = text.trim();
  if (!rest || rest.startsWith('#')) return opts;
  if (!rest.startsWith('{')) fail(line, `unexpected "${rest.slice(0, 20)}"`);
  let s = rest.slice(1).trimStart();
  for (;;) {
    if (s.startsWith('}')) break;
    const m = /^([a-z-]+)\s*:\s*"((?:[^"\\]|\\.)*)"\s*/i.exec(s);
    if (!m) fail(line, `expected key: "value" or } in the options at "${s.slice(0, 20)}"`);
    const key = m[1]!.toLowerCase();
    if (!KNOWN.has(key)) fail(line, `unknown option ${key} (known: ${[...KNOWN].join(', ')})`);
    opts[key] = m[2]!.replace(/\\(.)/g, '$1');
    check(key, opts[key], line);
    s = s.slice(m[0].length);
    if (s.startsWith(',')) s = s.slice(1).trimStart();
    else if (!s.startsWith('}')) fail(line, `expected , or } in the options at "${s.slice(0, 20)}"`);
  }
  const after = s.slice(1).trim();
  if (after && !after.startsWith('#')) fail(line, `unexpected "${after.slice(0, 20)}" after the options`);
  return opts;
}

/** Values that reach a DOT attribute unescaped must have a shape that cannot break out of it. */
function check(key: string, value: string, line: number): void {
  const bad =
    ((key === 'color' || key === 'bgcolor' || key === 'border-color') && !COLOR.test(value)) ||
    ((key === 'size' || key === 'border' || key === 'cellspacing' || key === 'cellpadding') &&
      !NUMBER.test(value)) ||
    (key === 'font' && !FONT.test(value)) ||
    (key === 'text-alignment' && !ALIGN.has(value));
  if (bad) fail(line, `bad ${key} "${value.slice(0, 40)}"`);
}

interface Model {
  title: Options;
  defaults: { header: Options; entity: Options; relationship: Options };
  entities: Entity[];
  relations: Relation[];
}

/** Parses an erd source; a mistake throws DiagramError with its line. */
export function parseErd(source: string): Model {
  const m: Model = {
    title: {},
    defaults: { header: {}, entity: {}, relationship: {} },
    entities: [],
    relations: [],
  };
  const byName = new Map<string, Entity>();
  let current: Entity | undefined;
  const lines = source.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const text = lines[i]!.trim();
    if (!text || text.startsWith('#')) continue;
    if (text.startsWith('[')) {
      const end = text.indexOf(']');
      if (end < 0) fail(n, 'expected ] after the entity name');
      const [name, extra] = readName(text.slice(1, end).trim(), n);
      if (extra) fail(n, `unexpected "${extra.slice(0, 20)}" in the entity name`);
      if (byName.has(name)) fail(n, `entity ${name} is defined twice`);
      current = { name, opts: readOptions(text.slice(end + 1), n), attrs: [] };
      byName.set(name, current);
      m.entities.push(current);
      continue;
    }
    const directive = /^([a-z]+)\s*\{/.exec(text);
    if (directive && DIRECTIVES.has(directive[1]!)) {
      const opts = readOptions(text.slice(directive[1]!.length), n);
      if (directive[1] === 'title') m.title = opts;
      else Object.assign(m.defaults[directive[1] as 'header' | 'entity' | 'relationship'], opts);
      continue;
    }
    const rel = relation(text, n);
    if (rel) {
      m.relations.push(rel);
      continue;
    }
    if (!current) fail(n, `expected [Entity], a relationship or a directive at "${text.slice(0, 30)}"`);
    const keys = /^[*+]{0,2}/.exec(text)![0];
    const [name, rest] = readName(text.slice(keys.length).trimStart(), n);
    current.attrs.push({ name, pk: keys.includes('*'), fk: keys.includes('+'), opts: readOptions(rest, n) });
  }
  for (const r of m.relations)
    for (const e of [r.from, r.to]) if (!byName.has(e)) fail(r.line, `unknown entity ${e}`);
  if (m.entities.length === 0) fail(lines.length, 'no entity: an erd diagram needs at least one [Entity]');
  return m;
}

/** `A 1--* B {options}`, or undefined when the line is not a relationship. */
function relation(text: string, line: number): Relation | undefined {
  let from: string;
  let rest: string;
  try {
    [from, rest] = readName(text, line);
  } catch {
    return undefined;
  }
  const op = /^(\S)--(\S)\s+/.exec(rest);
  if (!op) {
    // Two dashes between something: a relationship with a cardinality erd does not know.
    const odd = /^(\S*)--(\S*)/.exec(rest);
    if (odd && (odd[1] || odd[2]))
      fail(line, `unknown cardinality "${odd[0]}": each end is one of ? 1 * + (e.g. 1--*)`);
    return undefined;
  }
  for (const c of [op[1]!, op[2]!])
    if (!(c in CARDINALITY)) fail(line, `unknown cardinality "${c}": each end is one of ? 1 * +`);
  const [to, tail] = readName(rest.slice(op[0].length), line);
  return { from, to, card1: op[1]!, card2: op[2]!, opts: readOptions(tail, line), line };
}

/** HTML-like label text. */
function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A DOT "quoted string". */
function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

function font(text: string, o: Options): string {
  const attrs = [
    o['font'] ? ` face="${o['font']}"` : '',
    o['size'] ? ` point-size="${o['size']}"` : '',
    o['color'] ? ` color="${o['color']}"` : '',
  ].join('');
  return attrs ? `<font${attrs}>${text}</font>` : text;
}

function entityNode(e: Entity, m: Model, id: string): string {
  const o = { ...m.defaults.entity, ...e.opts };
  const h = { ...o, ...m.defaults.header };
  const align = o['text-alignment'] ?? 'left';
  const rows = [
    `<tr><td${o['bgcolor'] ? ` bgcolor="${o['bgcolor']}"` : ''}><b>${font(esc(o['label'] ?? e.name), { ...h, size: h['size'] ?? '16' })}</b></td></tr>`,
  ];
  for (const a of e.attrs) {
    let t = esc(a.opts['label'] ? `${a.name} [${a.opts['label']}]` : a.name);
    if (a.pk) t = `<u>${t}</u>`;
    if (a.fk) t = `<i>${t}</i>`;
    rows.push(`<tr><td align="${align}">${font(t, { ...o, ...a.opts })}</td></tr>`);
  }
  const table = [
    `border="${o['border'] ?? '1'}"`,
    `cellborder="0"`,
    `cellspacing="${o['cellspacing'] ?? '0'}"`,
    `cellpadding="${o['cellpadding'] ?? '4'}"`,
    o['border-color'] ? `color="${o['border-color']}"` : '',
  ].join(' ');
  return `  ${id} [label=<<table ${table.trim()}>${rows.join('')}</table>>];`;
}

/** The DOT graph of an erd source (parse errors throw DiagramError with their line). */
export function erdToDot(source: string): string {
  const m = parseErd(source);
  const ids = new Map(m.entities.map((e, i) => [e.name, `e${i}`]));
  const out = ['graph erd {', '  graph [rankdir=LR, nodesep=0.5, ranksep=1];'];
  const t = m.title;
  if (t['label']) {
    out.push(
      `  graph [label=${quote(t['label'])}, labelloc=t, fontsize=${t['size'] ?? '20'}${t['font'] ? `, fontname=${quote(t['font'])}` : ''}${t['color'] ? `, fontcolor=${quote(t['color'])}` : ''}];`,
    );
  }
  out.push('  node [shape=plaintext, margin=0, fontname="Helvetica"];', '  edge [fontname="Helvetica"];');
  for (const e of m.entities) out.push(entityNode(e, m, ids.get(e.name)!));
  for (const r of m.relations) {
    const o = { ...m.defaults.relationship, ...r.opts };
    const attrs = [
      `taillabel=${quote(CARDINALITY[r.card1]!)}`,
      `headlabel=${quote(CARDINALITY[r.card2]!)}`,
      'labeldistance=2',
      o['label'] ? `label=${quote(o['label'])}` : '',
      o['color'] ? `color=${quote(o['color'])}` : '',
      o['size'] ? `fontsize=${o['size']}` : '',
    ].filter(Boolean);
    out.push(`  ${ids.get(r.from)} -- ${ids.get(r.to)} [${attrs.join(', ')}];`);
  }
  out.push('}');
  return out.join('\n');
}
