// HTTP/1.1 pipelining against the real server: answers leave in order whatever the depth, one
// connection that pipelines 1000 downloads of an 8 MiB file and never reads holds the server to a
// bounded memory and a few files (and gives everything back when it leaves), and pipelined proxy
// requests abandoned by their client leave no upstream socket open and no per-client slot taken.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { type DevutilProcess, startDevutilProcess } from '../helpers/process.ts';

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident memory (MiB) and open descriptors of a process, from /proc. */
function usage(pid: number): { rss: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    rss: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

/** The server's Buffer and ArrayBuffer memory (MiB), from its own metrics. */
async function external(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^devutil_nodejs_external_memory_bytes (\S+)/m.exec(text)?.[1]) / MiB;
}

async function open(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => {});
  await new Promise((r) => s.once('connect', r));
  return s;
}

/** Reads `n` whole answers from `s` (Content-Length framed) and returns status and body of each. */
async function answers(s: Socket, n: number): Promise<{ status: number; body: Buffer }[]> {
  const out: { status: number; body: Buffer }[] = [];
  let buf = Buffer.alloc(0);
  for await (const chunk of s) {
    buf = Buffer.concat([buf, chunk as Buffer]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) break;
      const head = buf.subarray(0, end).toString('latin1');
      const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + len) break;
      out.push({ status: Number(head.slice(9, 12)), body: buf.subarray(end + 4, end + 4 + len) });
      buf = buf.subarray(end + 4 + len);
    }
    if (out.length >= n) break;
  }
  return out;
}

describe('pipelined requests on the real server', () => {
  let dev: DevutilProcess;
  before(async () => {
    dev = await startDevutilProcess({ DEVUTIL_FILES_RATE_LIMIT: 'off', DEVUTIL_LOG_LEVEL: 'warn' });
    const form = new FormData();
    form.append('file', new Blob([randomBytes(8 * MiB)]), 'big.bin');
    assert.equal((await fetch(`${dev.url}/api/file/big.bin`, { method: 'POST', body: form })).status, 200);
    for (const k of ['a', 'b', 'c']) {
      const f = new FormData();
      f.append('file', new Blob([`small ${k}`]), `${k}.txt`);
      assert.equal((await fetch(`${dev.url}/api/file/${k}.txt`, { method: 'POST', body: f })).status, 200);
    }
  });
  after(async () => dev?.stop());

  it('answers 200 pipelined requests in order, past the read-ahead cap', async () => {
    const s = await open(dev.port);
    const keys = Array.from({ length: 200 }, (_, i) => 'abc'[i % 3]);
    s.write(keys.map((k) => `GET /api/file/${k}.txt HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
    const got = await answers(s, keys.length);
    s.destroy();
    assert.equal(got.length, keys.length);
    got.forEach((a, i) => {
      assert.equal(a.status, 200);
      assert.equal(a.body.toString(), `small ${keys[i]}`, `answer ${i} in order`);
    });
  });

  it('holds 1000 pipelined 8 MiB downloads nobody reads to bounded memory, and frees all when the client goes', async () => {
    const pid = dev.proc.pid as number;
    // Warm: the first download's buffers and code paths are not the flood's.
    await (await fetch(`${dev.url}/api/file/big.bin`)).arrayBuffer();
    await sleep(500);
    const base = usage(pid);
    const baseExternal = await external(dev.url);
    const s = await open(dev.port);
    s.pause(); // never reads: every answer stays on the server's side
    s.write('GET /api/file/big.bin HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1000));
    // Sampled until it stops growing (at least 5 s): a server that reads queued answers' bodies
    // grows for many seconds, by about 1 MiB per request.
    let peak = base;
    let last = base.rss;
    for (let t = 0; t < 60; t++) {
      await sleep(1000);
      const now = usage(pid);
      peak = { rss: Math.max(peak.rss, now.rss), fds: Math.max(peak.fds, now.fds) };
      if (t >= 4 && Math.abs(now.rss - last) < 2) break;
      last = now.rss;
    }
    assert.ok(peak.rss - base.rss < 100, `RSS grew ${(peak.rss - base.rss).toFixed(1)} MiB (limit 100)`);
    assert.ok(peak.fds - base.fds < 20, `${peak.fds - base.fds} more descriptors open`);
    s.destroy();
    // Everything the connection held is let go at once (no garbage collection needed): its files
    // are closed and its buffers released.
    let back = usage(pid);
    let ext = await external(dev.url);
    for (let t = 0; t < 30 && (back.fds > base.fds + 2 || ext > baseExternal + 16); t++) {
      await sleep(1000);
      back = usage(pid);
      ext = await external(dev.url);
    }
    assert.ok(back.fds <= base.fds + 2, `descriptors ${back.fds} after, ${base.fds} before`);
    assert.ok(
      ext <= baseExternal + 16,
      `buffers ${ext.toFixed(1)} MiB after, ${baseExternal.toFixed(1)} before`,
    );
    // And the server goes on serving.
    assert.equal((await fetch(`${dev.url}/api/file/a.txt`)).status, 200);
  });
});

describe('pipelined proxy requests abandoned by the client', () => {
  let w: World;
  const held = new Set<Socket>();
  let seen = 0;
  before(async () => {
    w = await startWorld({
      git: false,
      overrides: { proxy: { maxConcurrent: 3, headersTimeoutMs: 60_000 } },
    });
    // An upstream that takes each request and never answers: only the proxy can let go of it.
    w.net.on('media.githubusercontent.com', (req) => {
      seen++;
      held.add(req.socket);
      req.socket.once('close', () => held.delete(req.socket));
    });
  });
  after(async () => {
    for (const s of held) s.destroy();
    await w?.close();
  });

  it('leaves no upstream socket open and no per-client slot taken', async () => {
    const port = w.proxy.port;
    const s = await open(port);
    s.write(
      Array.from(
        { length: 3 },
        (_, i) => `GET /proxy/media.githubusercontent.com/o/r/held-${i} HTTP/1.1\r\nHost: x\r\n\r\n`,
      ).join(''),
    );
    for (let t = 0; t < 200 && seen < 1; t++) await sleep(50);
    assert.ok(seen >= 1, 'the first request reached the upstream');
    s.destroy();
    for (let t = 0; t < 100 && held.size > 0; t++) await sleep(100);
    assert.equal(held.size, 0, 'every upstream request of the connection was let go');
    // All three slots are free again: three new held requests from new connections all get through.
    const before = seen;
    const again = await Promise.all([0, 1, 2].map(() => open(port)));
    for (const [i, c] of again.entries())
      c.write(`GET /proxy/media.githubusercontent.com/o/r/again-${i} HTTP/1.1\r\nHost: x\r\n\r\n`);
    for (let t = 0; t < 200 && seen - before < 3; t++) await sleep(50);
    for (const c of again) c.destroy();
    assert.equal(seen - before, 3, 'no slot was left taken by the abandoned requests');
  });
});
