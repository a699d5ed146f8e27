// Where the engine keeps a new render: in the memory tier only, written to disk once it is used again
// (a cache hit through the router, or a fast-lane repeat), at once when there is no memory tier.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { testConfig } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { renderCache } from '../cache.ts';
import { PlantumlEngine, type RenderRequest } from './engine.ts';

const log = pino({ level: 'silent' });
const request = (text: string): RenderRequest => ({
  op: 'render',
  format: 'svg',
  index: 0,
  dark: false,
  source: `@startuml\nBob -> Alice : ${text}\n@enduml`,
});

describe('PlantUML renders kept on disk from their second use', {
  skip: toolSkip('java', ['-version']),
  timeout: 180_000,
}, () => {
  const engines: PlantumlEngine[] = [];
  const engine = (diagrams: Record<string, unknown> = {}) => {
    const cfg = testConfig({ diagrams: { workers: 1, quarantineSec: 0, ...diagrams } });
    const e = new PlantumlEngine(cfg.diagrams, cfg.server.dataDir, log);
    engines.push(e);
    return { e, cfg };
  };
  /** What another server on the same data directory finds on disk (its memory tier is empty). */
  const onDisk = async (cfg: ReturnType<typeof testConfig>, e: PlantumlEngine, r: RenderRequest) => {
    await e.cache.idle();
    const key = (e as unknown as { key(r: RenderRequest): string }).key(r);
    return renderCache(cfg.server.dataDir, cfg.diagrams, log).get(key);
  };
  after(async () => {
    await Promise.all(engines.map((e) => e.close()));
  });

  it('writes a render to disk when it is asked for again through the router, once', async () => {
    const { e, cfg } = engine();
    const r = request('kept once used');
    const first = await e.render(r, 'a');
    assert.equal(first.cached, false);
    assert.equal(await onDisk(cfg, e, r), undefined, 'a render used once is in memory only');
    assert.equal(e.cache.stats().writes, 0);
    const again = await e.render(r, 'b');
    assert.equal(again.cached, true);
    const disk = await onDisk(cfg, e, r);
    assert.equal(disk?.tier, 'disk');
    assert.ok(disk?.body.equals(first.body));
    assert.equal(disk?.entry.meta.status, 'ok');
    await e.render(r, 'c');
    await e.cache.idle();
    assert.equal(e.cache.stats().writes, 1, 'written once, not on every hit');
  });

  it('writes a render to disk when the fast lane repeats it', async () => {
    const { e, cfg } = engine();
    const r = request('kept once repeated');
    const first = await e.render(r, 'a');
    const valid = e.holds(r, first.body);
    assert.equal(await onDisk(cfg, e, r), undefined);
    assert.equal(valid(), true);
    assert.ok((await onDisk(cfg, e, r))?.body.equals(first.body));
  });

  it('writes every render to disk at once without a memory tier', async () => {
    const { e, cfg } = engine({ cacheMemory: 0 });
    const r = request('no memory tier');
    const first = await e.render(r, 'a');
    assert.ok((await onDisk(cfg, e, r))?.body.equals(first.body));
  });
});
