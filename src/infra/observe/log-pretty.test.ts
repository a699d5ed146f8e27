import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { prettyLine } from './log-pretty.ts';

const at = new Date(2026, 0, 2, 3, 4, 5, 6).getTime();

describe('pretty log lines', () => {
  it('puts time, level, utility and message first, then the fields, without pid and hostname', () => {
    const line = JSON.stringify({
      level: 40,
      time: at,
      pid: 1,
      hostname: 'vm',
      reqId: 'r-1',
      svc: 'proxy',
      host: 'codeload.github.com',
      status: 502,
      reason: 'upstream connection failed',
      msg: 'upstream failed',
    });
    assert.equal(
      prettyLine(line, false),
      '03:04:05.006 WARN  [proxy] upstream failed  host=codeload.github.com status=502 reason="upstream connection failed" reqId=r-1\n',
    );
  });

  it('reads Fastify request lines as method, path and caller', () => {
    const line = JSON.stringify({
      level: 30,
      time: at,
      req: { method: 'GET', url: '/api/ip', host: 'x', remoteAddress: '203.0.113.7' },
      msg: 'incoming request',
    });
    assert.equal(
      prettyLine(line, false),
      '03:04:05.006 INFO  incoming request  GET /api/ip from 203.0.113.7\n',
    );
    const done = JSON.stringify({
      level: 30,
      time: at,
      res: { statusCode: 200 },
      responseTime: 1.6,
      msg: 'request completed',
    });
    assert.equal(prettyLine(done, false), '03:04:05.006 INFO  request completed  -> 200 in 2 ms\n');
    // The one line per request (errors.ts OnceLogController) carries both.
    const both = JSON.stringify({
      level: 30,
      time: at,
      reqId: 'r1',
      req: { method: 'GET', url: '/api/ip', host: 'x', remoteAddress: '203.0.113.7' },
      res: { statusCode: 200 },
      responseTime: 1.6,
      msg: 'request completed',
    });
    assert.equal(
      prettyLine(both, false),
      '03:04:05.006 INFO  request completed  GET /api/ip from 203.0.113.7 -> 200 in 2 ms reqId=r1\n',
    );
  });

  it('gives the size of the answer and paints the status by its class on a terminal', () => {
    const line = (statusCode: number, size: number) =>
      JSON.stringify({
        level: 30,
        time: at,
        req: { method: 'GET', url: '/x', remoteAddress: '::1' },
        res: { statusCode, size },
        responseTime: 3,
        msg: 'request completed',
      });
    assert.equal(
      prettyLine(line(200, 512), false),
      '03:04:05.006 INFO  request completed  GET /x from ::1 -> 200 in 3 ms, 512 B\n',
    );
    assert.match(prettyLine(line(200, 1536), false), /-> 200 in 3 ms, 1\.5 kB\n$/);
    assert.match(prettyLine(line(200, 5 * 1024 * 1024), false), /, 5\.0 MB\n$/);
    assert.match(prettyLine(line(200, 0), true), /-> \u001b\[32m200\u001b\[0m in 3 ms, 0 B/);
    assert.match(prettyLine(line(404, 10), true), /-> \u001b\[33m404\u001b\[0m/);
    assert.match(prettyLine(line(502, 10), true), /-> \u001b\[31m502\u001b\[0m/);
  });

  it('shows an error as type and message, with its stack indented below', () => {
    const line = JSON.stringify({
      level: 50,
      time: at,
      err: {
        type: 'TypeError',
        message: 'x is undefined',
        stack: 'TypeError: x is undefined\n    at f (a.ts:1:2)',
      },
      msg: 'unhandled error',
    });
    assert.equal(
      prettyLine(line, false),
      '03:04:05.006 ERROR unhandled error  err="TypeError: x is undefined"\n    at f (a.ts:1:2)\n',
    );
  });

  it('escapes control characters a client could put in a logged path', () => {
    const line = JSON.stringify({ level: 30, time: at, path: '/\u001b[2J\u009bx', msg: 'm\u001b]0;t\u0007' });
    const out = prettyLine(line, false);
    assert.doesNotMatch(out.slice(0, -1), /[\u0000-\u001f\u007f-\u009f]/);
    assert.match(out, /path="\/\\u001b\[2J\\u009bx"/);
  });

  it('colours the level only when asked to', () => {
    const line = JSON.stringify({ level: 50, time: at, msg: 'x' });
    assert.match(prettyLine(line, true), /\u001b\[31mERROR\u001b\[0m/);
    assert.doesNotMatch(prettyLine(line, false), /\u001b/);
  });

  it('passes a line that is not JSON through unchanged', () => {
    assert.equal(prettyLine('plain text', false), 'plain text\n');
  });
});
