// JSON request bodies: Fastify's own parser (prototype poisoning refused) behind a nesting cap. A
// body of 100k nested arrays parses, but JSON.stringify of it overflows the stack on Node 20 (and
// every recursive walk over it is at risk), so it is refused before parsing, in the route's envelope.
import type { FastifyInstance } from 'fastify';
import { badRequest } from './errors.ts';

const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** True when `text` nests arrays/objects deeper than `max` (brackets inside strings do not count). */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** Throws the 400 every JSON route answers for a body nested past the cap. */
export function checkJsonDepth(text: string, max: number): void {
  if (nestedDeeperThan(text, max))
    throw badRequest(`JSON body is nested deeper than ${max} levels`, 'JSON_TOO_DEEP');
}

/** Replaces the server-wide application/json parser; routes keep their own bodyLimit. */
export function installJsonParser(app: FastifyInstance, maxDepth: number): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string; // parseAs: 'string'
    try {
      checkJsonDepth(text, maxDepth);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    parse(req, text, done);
  });
}
