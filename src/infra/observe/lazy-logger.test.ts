import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { LazyChild } from './lazy-logger.ts';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _e, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  const parent = pino({ level }, stream);
  let children = 0;
  const child = parent.child.bind(parent);
  parent.child = ((b: pino.Bindings, o?: pino.ChildLoggerOptions) => {
    children++;
    return child(b, o);
  }) as unknown as typeof parent.child;
  return { parent, lines, built: () => children };
}

describe('LazyChild', () => {
  it('builds no child while nothing is logged at an enabled level', () => {
    const c = capture('warn');
    const log = new LazyChild(c.parent, { reqId: 'r1' });
    log.info('ignored');
    log.debug({ a: 1 }, 'ignored');
    assert.equal(c.built(), 0);
    assert.equal(c.lines.length, 0);
    log.warn({ a: 1 }, 'kept');
    assert.equal(c.built(), 1);
    assert.equal(c.lines[0]?.['reqId'], 'r1');
    assert.equal(c.lines[0]?.['msg'], 'kept');
  });

  it('keeps bindings of grandchildren and honours a child level', () => {
    const c = capture('info');
    const log = new LazyChild(c.parent, { reqId: 'r2' }).child({ svc: 'ip' });
    log.info('hello');
    assert.deepEqual([c.lines[0]?.['reqId'], c.lines[0]?.['svc']], ['r2', 'ip']);
    const quiet = new LazyChild(c.parent, { reqId: 'r3' }, { level: 'error' });
    quiet.warn('dropped');
    assert.equal(c.lines.length, 1);
    assert.equal(quiet.level, 'error');
  });
});
