// What every image source provides: pick an entry for an id (or at random), load its pixels, and
// list its catalogue. Sources are tried in config order; a throw means "next source, please".
import { createHash, randomInt } from 'node:crypto';

export type SourceName = 'dir' | 'upstream' | 'generator';

export interface SourceEntry {
  /** The public id: the same id gives the same image while the source set is unchanged. */
  id: string;
  /** Cache identity, including a version (file size+mtime, template, generator version). */
  key: string;
  /** Native size when known before loading. */
  width?: number;
  height?: number;
  author?: string;
  license?: string;
  /** Where the original lives (attribution page), when known. */
  url?: string;
  /** The subdirectory it belongs to (directory source), when it is in one. */
  category?: string;
}

export interface Category {
  name: string;
  /** Images in it. */
  total: number;
}

export type Loaded =
  | { kind: 'bytes'; data: Buffer }
  /** Vector artwork rendered straight at the output size; width/height are its native size. */
  | { kind: 'art'; width: number; height: number; svg(width: number, height: number): string };

export interface Catalogue {
  total: number;
  items: SourceEntry[];
}

export interface ImageSource {
  readonly name: SourceName;
  /** Loading waits on the network: done outside the sharp slots so a slow origin cannot starve them. */
  readonly remote?: boolean;
  /** `category` is only passed to a source whose hasCategory() says yes. */
  pick(id: string | null, category?: string): SourceEntry;
  load(entry: SourceEntry): Promise<Loaded>;
  list(offset: number, limit: number, category?: string): Catalogue;
  /** The categories a source can pick from (only the directory has any). */
  categories?(): Category[];
  hasCategory?(name: string): boolean;
  close?(): void;
}

/** Thrown when a source cannot serve right now (empty directory, upstream down, bad file...). */
export class SourceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SourceError';
  }
}

/**
 * A stable index in [0, n) for an id: first 6 bytes of SHA-256 (docs/protocols/picsum.md §2 allows any
 * stable hash).
 */
export function indexOf(id: string, n: number): number {
  return createHash('sha256').update(id).digest().readUIntBE(0, 6) % n;
}

/** An id for a random request from a pool of `n` numbered ids, so random requests cache well. */
export function randomPoolId(n: number): string {
  return String(randomInt(n));
}
