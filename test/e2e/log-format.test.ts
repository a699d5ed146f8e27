// Log lines as people and collectors get them from `devutil serve`: readable lines on a terminal
// (a real pseudo-terminal through script(1)) or with DEVUTIL_LOG_FORMAT=pretty, JSON when stdout
// is a pipe or a file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLOSED_PORT, freePort } from '../helpers/ports.ts';
import { startDevutilProcess } from '../helpers/process.ts';
import { sharedDiagramsBuildEnv, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} INFO {2}devutil \S+ serving on http:\/\/127\.0\.0\.1:\d+/m;

describe('log format', () => {
  it('writes one JSON object per line when stdout is not a terminal (the auto default), one per request', async () => {
    const p = await startDevutilProcess();
    const token = `123456789:${'A'.repeat(35)}`;
    // Answered, refused with a code (400), not found, a bot token in a path (never logged).
    const paths = [
      '/api/ip',
      '/rest/api/v1/image?width=abc',
      '/api/file/no-such-key',
      `/api/file/${token}`,
      '/api/ip?format=text',
    ];
    const statuses: number[] = [];
    for (const [i, path] of paths.entries()) {
      const r = await fetch(`${p.url}${path}`, { headers: { 'x-request-id': `one-${i}` } });
      await r.arrayBuffer();
      statuses.push(r.status);
    }
    assert.deepEqual(
      statuses.map((s) => s < 400),
      [true, false, false, false, true],
    );
    assert.equal(await p.stop(), 0);
    const out = p.output();
    const lines = out.trim().split('\n');
    assert.ok(lines.length > 3, out);
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), l);
    const objs = lines.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
    for (const [i, path] of paths.entries()) {
      const mine = objs.filter((o) => (o['reqId'] as unknown) === `one-${i}`);
      assert.equal(mine.length, 1, `one line for ${path}: ${JSON.stringify(mine)}`);
      const o = mine[0] ?? {};
      const status = statuses[i] ?? 0;
      assert.equal(o['msg'] as unknown, status < 400 ? 'request completed' : 'request refused');
      assert.equal(o['req']?.['method'], 'GET');
      assert.equal(o['req']?.['url'], path.replace(token, '[redacted]'));
      assert.equal(o['req']?.['remoteAddress'], '127.0.0.1');
      assert.equal(o['res']?.['statusCode'], status);
      assert.equal(typeof (o['responseTime'] as unknown), 'number');
      if (status >= 400) assert.equal(typeof (o['code'] as unknown), 'string', 'a refusal names its code');
      assert.ok(!JSON.stringify(o).includes(token));
    }
    assert.equal(objs.filter((o) => (o['msg'] as unknown) === 'incoming request').length, 0);
  });

  it('writes readable lines with DEVUTIL_LOG_FORMAT=pretty, failures included', async () => {
    // github.com "resolves" to a closed port: the upstream refuses the connection.
    const closed = CLOSED_PORT;
    const p = await startDevutilProcess({
      DEVUTIL_LOG_FORMAT: 'pretty',
      DEVUTIL_PROXY_RESOLVE: `github.com=127.0.0.1:${closed}`,
    });
    await fetch(`${p.url}/api/ip`, { headers: { 'x-request-id': 'pretty-1' } });
    const r = await fetch(`${p.url}/proxy/github.com/o/r/archive/main.zip`, {
      headers: { 'x-request-id': 'pretty-2' },
    });
    assert.equal(r.status, 502);
    assert.equal(await p.stop(), 0);
    const out = p.output();
    const failure = out.split('\n').filter((l) => l.includes('reqId=pretty-2') && /WARN|ERROR/.test(l));
    assert.equal(failure.length, 1, out);
    assert.match(
      failure[0] ?? '',
      /WARN {2}\[proxy\] upstream failed {2}host=github\.com path=\/o\/r\/archive\/main\.zip status=502 .*reason="upstream connection failed" code=ECONNREFUSED/,
    );
    assert.match(out, PRETTY);
    const one = out.split('\n').filter((l) => l.includes('reqId=pretty-1'));
    assert.equal(one.length, 1, out);
    assert.match(
      one[0] ?? '',
      /INFO {2}\[ip\] request completed {2}GET \/api\/ip from 127\.0\.0\.1 -> 200 in \d+ ms, \d+ B reqId=pretty-1$/,
    );
    assert.doesNotMatch(out, /^\{/m, 'no JSON lines');
    assert.doesNotMatch(out, /\u001b\[/, 'no colours when the output is not a terminal');
  });

  it('writes coloured readable lines when stdout is a terminal, one per request', {
    skip: toolSkip('script', ['-V']),
  }, async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const cmd = `exec '${process.execPath}' '${join(ROOT, 'bin/devutil.js')}' serve`;
    // script(1) gives the server a pseudo-terminal as stdout, as an operator's shell would.
    const proc = spawn('script', ['-qfec', cmd, '/dev/null'], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/root',
        TERM: 'xterm',
        DEVUTIL_PORT: String(port),
        DEVUTIL_HOST: '127.0.0.1',
        DEVUTIL_PUBLIC_URL: url,
        DEVUTIL_DATA_DIR: tempDir(),
        DEVUTIL_RELAY_ENABLED: 'false',
        // Its JVM starts with it (the default), from the run's PlantUML build, not a build of its own.
        ...sharedDiagramsBuildEnv(),
      },
    });
    let out = '';
    proc.stdout.on('data', (c) => {
      out += c;
    });
    const exited = new Promise((r) => proc.once('exit', r));
    try {
      for (let i = 0; i < 600 && !/serving on/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
      const plain = out.replace(/\u001b\[\d+m/g, '');
      assert.match(plain, PRETTY);
      assert.match(out, /\u001b\[32mINFO \u001b\[0m/, 'the level is coloured');
      assert.doesNotMatch(plain, /^\{"level"/m);
      // An answered request, a refusal and a bot key in a path: one line each, when it ends.
      const token = `123456789:${'T'.repeat(35)}`;
      const asked = ['/rest/api/v1/ip', '/rest/api/v1/image?width=abc', `/api/file/${token}`];
      const statuses: number[] = [];
      for (const [i, path] of asked.entries()) {
        const r = await fetch(`${url}${path}`, { headers: { 'x-request-id': `tty-${i}` } });
        await r.arrayBuffer();
        statuses.push(r.status);
      }
      assert.deepEqual(
        statuses.map((s) => s < 400),
        [true, false, false],
      );
      const lineOf = (i: number) =>
        out
          .replace(/\u001b\[\d+m/g, '')
          .split(/\r?\n/)
          .filter((l) => l.includes(`reqId=tty-${i}`));
      for (let i = 0; i < 200 && lineOf(asked.length - 1).length === 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      for (const [i, path] of asked.entries()) {
        const status = statuses[i];
        const lines = lineOf(i);
        assert.equal(lines.length, 1, `one line for ${path}:\n${out}`);
        const shown = path.replace(token, '[redacted]').replace(/[.?*+^$()[\]\\]/g, '\\$&');
        assert.match(
          lines[0] ?? '',
          new RegExp(
            `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO {2}\\[\\w+\\] request (completed|refused) {2}GET "?${shown}"? from 127\\.0\\.0\\.1 -> ${status} in \\d+ ms, \\d+(\\.\\d)? [kM]?B\\b`,
          ),
        );
      }
      assert.match(out, /-> \u001b\[33m400\u001b\[0m/, 'a refusal is painted');
      assert.ok(!out.includes(token), 'the bot key is not on the terminal');
    } finally {
      if (proc.pid) process.kill(-proc.pid, 'SIGTERM');
      await exited;
    }
  });
});
