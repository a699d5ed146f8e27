// The decoding step every diagram route shares (plantuml-server's URL API, the editor, Kroki's GET
// routes): an encoded path segment to diagram text, memoised, a bad encoding answered 400.
import type { ByteLru } from '../../../infra/cache/lru.ts';
import { badRequest } from '../../../infra/http/errors.ts';
import { DecodeError, decodeDiagram, decodeKroki, normalizeSource } from './encoding.ts';

/**
 * The text of an encoded diagram. `plantuml`: PlantUML's encoding first, bare text wrapped in
 * @startuml/@enduml; `raw`: the same decoding, text as it is (Kroki's PlantUML-family types);
 * `kroki`: Kroki's zlib + base64url first, text as it is (the other languages).
 */
export function decodeOrThrow(
  decoded: ByteLru<{ source: string }>,
  encoded: string,
  maxBytes: number,
  mode: 'plantuml' | 'raw' | 'kroki' = 'plantuml',
): string {
  const memo = `${maxBytes}:${mode}:${encoded}`;
  const hit = decoded.get(memo);
  if (hit) return hit.source;
  try {
    const source =
      mode === 'kroki'
        ? decodeKroki(encoded, maxBytes)
        : mode === 'raw'
          ? decodeDiagram(encoded, maxBytes)
          : normalizeSource(decodeDiagram(encoded, maxBytes));
    if (encoded.length <= 16 * 1024) decoded.set(memo, { source });
    return source;
  } catch (err) {
    if (err instanceof DecodeError) throw badRequest(err.message, 'BAD_ENCODING');
    throw err;
  }
}
