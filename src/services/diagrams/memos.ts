// The diagram utility's memos of one server (ctx.local(DIAGRAM_MEMOS)): prepared answers of cached
// diagrams and decoded sources of recent URLs. Per server, so two servers in one process (tests, a
// fleet in one process) never hand each other's bodies or count each other's bytes.
import { ByteLru } from '../../infra/cache/lru.ts';
import { PreparedMemo } from '../../infra/http/prepared-response.ts';
import type { LocalKey } from '../define.ts';

export interface DiagramMemos {
  /** Prepared answers of cached PlantUML-engine diagrams, one per body and content type. */
  plantuml: PreparedMemo;
  /** The same for the other languages' renders (Kroki's API). */
  kroki: PreparedMemo;
  /**
   * Decoded sources of recent URLs: a repeated diagram URL (the cached case) skips the inflate,
   * whose per-call zlib stream object showed in the cache-hit profile. Bounded by bytes (UTF-16
   * estimate); only successful decodes are kept.
   */
  decoded: ByteLru<{ source: string }>;
}

export const DIAGRAM_MEMOS: LocalKey<DiagramMemos> = {
  make: () => ({
    plantuml: new PreparedMemo(),
    kroki: new PreparedMemo(),
    decoded: new ByteLru<{ source: string }>(8 * 1024 * 1024, (v) => 2 * v.source.length + 128, 256 * 1024),
  }),
};
