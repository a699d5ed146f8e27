// JSON read with its duplicate keys seen. JSON.parse keeps the last of two equal keys, other parsers
// the first (Telegram's Bot API server does: docs/protocols/telegram-bot-api.md §1), so a check made
// on JSON.parse's reading can pass a text another parser reads otherwise. parseJson refuses a
// duplicate key at any depth, or reads the first one as those parsers do. RFC 8259 grammar only;
// nesting capped so no recursion runs deep. Objects are built with own properties only (a
// "__proto__" key is a key, not a prototype).

export class JsonError extends Error {
  override name = 'JsonError';
}

/** A key given twice in one object: the text means different things to different parsers. */
export class DuplicateKey extends JsonError {
  override name = 'DuplicateKey';
  readonly key: string;
  constructor(key: string) {
    super(`the key "${key.slice(0, 64)}" is given twice in one object`);
    this.key = key;
  }
}

export interface JsonOptions {
  /** 'refuse': throw DuplicateKey; 'first': keep the first value, as Telegram's server does. */
  duplicates: 'refuse' | 'first';
  /** Deepest nesting of arrays and objects read (then JsonError). */
  maxDepth: number;
}

const WS = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERALS: [string, unknown][] = [
  ['true', true],
  ['false', false],
  ['null', null],
];

export function parseJson(text: string, opts: JsonOptions): unknown {
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonError(`malformed JSON: ${what} at offset ${i}`);
  };
  const ws = () => {
    WS.lastIndex = i;
    WS.test(text);
    i = WS.lastIndex;
  };
  const token = (re: RegExp): string | null => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) return null;
    i = re.lastIndex;
    return m[0];
  };
  const string = (): string => {
    const t = token(STRING);
    return t === null ? fail('expected a string') : (JSON.parse(t) as string);
  };

  function value(depth: number): unknown {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth >= opts.maxDepth) throw new JsonError(`JSON is nested deeper than ${opts.maxDepth} levels`);
      i++;
      return c === '{' ? object(depth + 1) : array(depth + 1);
    }
    if (c === '"') return string();
    for (const [word, v] of LITERALS)
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    const n = token(NUMBER);
    return n === null ? fail('unexpected character') : Number(n);
  }

  function object(depth: number): Record<string, unknown> {
    const entries: [string, unknown][] = [];
    const seen = new Set<string>();
    ws();
    if (text[i] === '}') {
      i++;
      return {};
    }
    for (;;) {
      ws();
      const key = string();
      ws();
      if (text[i++] !== ':') fail("expected ':'");
      const v = value(depth);
      if (!seen.has(key)) {
        seen.add(key);
        entries.push([key, v]);
      } else if (opts.duplicates === 'refuse') throw new DuplicateKey(key);
      ws();
      const next = text[i++];
      if (next === '}') return Object.fromEntries(entries);
      if (next !== ',') fail("expected ',' or '}'");
    }
  }

  function array(depth: number): unknown[] {
    const out: unknown[] = [];
    ws();
    if (text[i] === ']') {
      i++;
      return out;
    }
    for (;;) {
      out.push(value(depth));
      ws();
      const next = text[i++];
      if (next === ']') return out;
      if (next !== ',') fail("expected ',' or ']'");
    }
  }

  const v = value(0);
  ws();
  if (i !== text.length) fail('unexpected data after the value');
  return v;
}
