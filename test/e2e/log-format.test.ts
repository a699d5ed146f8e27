// Log lines as people and collectors get them from `devutil serve`: readable lines on a terminal
// (a real pseudo-terminal through script(1)) or with DEVUTIL_LOG_FORMAT=pretty, JSON when stdout
// is a pipe or a file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLOSED_PORT, freePort } from '../helpers/ports.ts';
import { startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} INFO {2}devutil \S+ serving on http:\/\/127\.0\.0\.1:\d+/m;

describe('log format', () => {
  it('writes one JSON object per line when stdout is not a terminal (the auto default)', async () => {
    const p = await startDevutilProcess();
    await fetch(`${p.url}/api/ip`);
    assert.equal(await p.stop(), 0);
    const lines = p.output().trim().split('\n');
    assert.ok(lines.length > 3, p.output());
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), l);
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
    assert.match(out, /INFO {2}\[ip\] incoming request {2}GET \/api\/ip from 127\.0\.0\.1 reqId=pretty-1$/m);
    assert.match(out, /INFO {2}\[ip\] request completed {2}-> 200 in \d+ ms reqId=pretty-1$/m);
    assert.doesNotMatch(out, /^\{/m, 'no JSON lines');
    assert.doesNotMatch(out, /\u001b\[/, 'no colours when the output is not a terminal');
  });

  it('writes coloured readable lines when stdout is a terminal', {
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
    } finally {
      if (proc.pid) process.kill(-proc.pid, 'SIGTERM');
      await exited;
    }
  });
});
