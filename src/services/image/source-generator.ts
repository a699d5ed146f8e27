// The built-in generator source: any id is a seed, random requests draw from a numbered pool.
import { artSvg, GENERATOR_VERSION, sceneOf } from './generator.ts';
import { type Catalogue, type ImageSource, type Loaded, randomPoolId, type SourceEntry } from './source.ts';

export class GeneratorSource implements ImageSource {
  readonly name = 'generator';
  private readonly pool: number;
  constructor(pool: number) {
    this.pool = pool;
  }

  private entry(id: string): SourceEntry {
    const s = sceneOf(id);
    return {
      id,
      key: `gen:v${GENERATOR_VERSION}:${id}`,
      width: s.width,
      height: s.height,
      author: `devutil generator (${s.style})`,
      license: 'CC0-1.0',
    };
  }

  pick(id: string | null): SourceEntry {
    // No scene here: a cache hit needs only the key, and load() works the scene out on a miss.
    const pid = id ?? randomPoolId(this.pool);
    return { id: pid, key: `gen:v${GENERATOR_VERSION}:${pid}` };
  }

  async load(entry: SourceEntry): Promise<Loaded> {
    const { width, height } = sceneOf(entry.id);
    return { kind: 'art', width, height, svg: (w, h) => artSvg(entry.id, w, h) };
  }

  list(offset: number, limit: number): Catalogue {
    const items: SourceEntry[] = [];
    for (let i = offset; i < Math.min(this.pool, offset + limit); i++) items.push(this.entry(String(i)));
    return { total: this.pool, items };
  }
}
