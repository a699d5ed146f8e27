// Upstreams that hang or reset (issue 11 faults): the proxy answers 504/502 within its timeouts,
// frees the connection, and keeps serving other requests.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorld, type World } from '../fixtures/proxy/world.ts';

describe('proxy: upstreams that hang or reset', () => {
  let w: World;
  const held: { destroy(): void }[] = [];
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { headersTimeoutMs: 800, bodyTimeoutMs: 800 } } });
    // Never answers: the request is held until the proxy gives up.
    w.net.on('media.githubusercontent.com', (req) => {
      held.push(req.socket);
    });
    // Answers headers, then stalls mid-body.
    w.net.on('objects.githubusercontent.com', (req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '100000' });
      res.write(Buffer.alloc(1000));
      held.push(req.socket);
    });
    // Resets the connection without answering.
    w.net.on('codeload.github.com', (req) => {
      req.socket.destroy();
    });
  });
  after(async () => {
    for (const s of held) s.destroy();
    await w?.close();
  });

  it('answers 504 when the upstream never sends headers', async () => {
    const t = Date.now();
    const r = await fetch(`${w.base}/media.githubusercontent.com/a/b/c.bin`);
    assert.equal(r.status, 504);
    assert.match(await r.text(), /\n$/);
    assert.ok(Date.now() - t < 8000);
  });

  it('cuts a body that stalls mid-transfer instead of hanging the client', async () => {
    const r = await fetch(`${w.base}/objects.githubusercontent.com/x/y.bin`);
    assert.equal(r.status, 200);
    await assert.rejects(r.arrayBuffer(), 'a stalled body must end in an error, not hang');
  });

  it('answers 502 when the upstream resets the connection', async () => {
    const r = await fetch(`${w.base}/codeload.github.com/owner/repo/tar.gz/refs/heads/main`);
    assert.equal(r.status, 502);
  });

  it('keeps serving afterwards', async () => {
    // The fixture's avatar: a PNG signature and IHDR length, 16 bytes.
    const r = await fetch(`${w.base}/secure.gravatar.com/avatar/00000000000000000000000000000000`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/png');
    assert.deepEqual(
      Buffer.from(await r.arrayBuffer()),
      Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
    );
    // And the hosts that hung or reset are reachable again once they answer.
    w.net.on('codeload.github.com', (_req, res) => void res.end('back\n'));
    const again = await fetch(`${w.base}/codeload.github.com/o/r/tar.gz/refs/tags/v2`);
    assert.equal(again.status, 200);
    assert.equal(await again.text(), 'back\n');
  });
});
