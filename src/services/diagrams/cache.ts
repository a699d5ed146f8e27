// What the diagram renderer keeps in the shared cache (infra/cache/cache.ts): the body plus what a reply
// needs besides it. Keys are hex SHA-256 of everything that shapes the output (engine, profile,
// format, page, source); error results are kept too, as the same source fails the same way.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { Cache, type CacheHit, type PutOptions } from '../../infra/cache/cache.ts';
import type { DiagramError, IncludeRecord } from './plantuml/protocol.ts';

export interface Rendered {
  status: 'ok' | 'error';
  description: string;
  errors: DiagramError[];
  /** URLs the engine read for this result and what they held (includes.ts); absent when none. */
  includes?: IncludeRecord[];
  body: Buffer;
}

export type RenderedMeta = Omit<Rendered, 'body'>;

export function renderCache(
  dataDir: string,
  sizes: { cacheMemory: number; cacheDisk: number },
  log: Logger,
): Cache<RenderedMeta> {
  return new Cache<RenderedMeta>({
    name: 'plantuml',
    dir: join(dataDir, 'plantuml', 'cache'),
    memoryBytes: sizes.cacheMemory,
    diskBytes: sizes.cacheDisk,
    onError: (err) => log.warn({ err }, 'plantuml cache failed'),
  });
}

export const fromHit = (hit: CacheHit<RenderedMeta>): Rendered => ({ ...hit.entry.meta, body: hit.body });

export const store = (
  cache: Cache<RenderedMeta>,
  key: string,
  r: Rendered,
  o: PutOptions = {},
): Promise<boolean> =>
  cache.put(
    key,
    r.body,
    {
      status: r.status,
      description: r.description,
      errors: r.errors,
      ...(r.includes ? { includes: r.includes } : {}),
    },
    o,
  );
