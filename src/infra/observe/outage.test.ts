import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Outage } from './outage.ts';

function recorder() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) =>
    void lines.push({ level, fields, msg });
  return { lines, log: { warn: at('warn'), info: at('info') } };
}

describe('outage log', { timeout: 10_000 }, () => {
  it('warns at the first failure of an outage and says once when it is over', () => {
    const r = recorder();
    const o = new Outage(r.log as never, 'the store');
    o.ok();
    assert.equal(r.lines.length, 0, 'nothing to say while it answers');
    for (let i = 0; i < 5; i++) o.failed(new Error('ECONNREFUSED'), 'store failed', { bucket: 'ip' });
    assert.deepEqual(
      r.lines.map((l) => [l.level, l.msg]),
      [['warn', 'store failed']],
    );
    assert.equal(r.lines[0]?.fields['bucket'], 'ip');
    assert.equal((r.lines[0]?.fields['err'] as { message?: string } | undefined)?.message, 'ECONNREFUSED');
    o.ok();
    o.ok();
    assert.equal(r.lines.length, 2);
    assert.equal(r.lines[1]?.level, 'info');
    assert.equal(r.lines[1]?.msg, 'the store answers again');
    assert.equal(r.lines[1]?.fields['failures'], 5);
    // The next outage is a new one: warned again.
    o.failed(new Error('timeout'), 'store failed');
    assert.equal(r.lines.length, 3);
    assert.equal(r.lines[2]?.level, 'warn');
  });

  it('writes the first warning on the logger it is given (a request logger carries the request id)', () => {
    const own = recorder();
    const req = recorder();
    const o = new Outage(own.log as never, 'the store');
    o.failed(new Error('down'), 'store failed', {}, req.log as never);
    o.failed(new Error('down'), 'store failed', {}, req.log as never);
    assert.equal(req.lines.length, 1);
    assert.equal(own.lines.length, 0);
    o.ok();
    assert.equal(own.lines.length, 1, 'the end is said on its own logger');
  });
});
