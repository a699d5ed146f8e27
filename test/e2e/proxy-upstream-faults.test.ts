// Upstreams that hang or reset (issue 11 faults): the proxy answers 504/502 within its timeouts,
// frees the connection, and keeps serving other requests.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { LogCapture } from '../helpers/server.ts';

/** The warn-or-worse lines logged for one request id. */
function failureLines(logs: LogCapture, reqId: string): Record<string, unknown>[] {
  return logs.lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((o) => o['reqId'] === reqId && Number(o['level']) >= 40);
}

describe('proxy: upstreams that hang or reset', () => {
  let w: World;
  const held: { destroy(): void }[] = [];
  const logs = new LogCapture();
  before(async () => {
    w = await startWorld({
      logs,
      git: false,
      // Short enough to wait for, long enough for the good answers on a busy machine.
      overrides: { proxy: { headersTimeoutMs: 2000, bodyTimeoutMs: 2000 } },
    });
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

  /** Waits for the exchange line, written when the response closes. */
  async function oneFailureLine(reqId: string): Promise<Record<string, unknown>> {
    for (let i = 0; i < 100 && failureLines(logs, reqId).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100)); // room for a second line, if there were one
    const lines = failureLines(logs, reqId);
    assert.equal(
      lines.length,
      1,
      `one line for the failure, got:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`,
    );
    const line = lines[0] as Record<string, unknown>;
    assert.equal(line['err'], undefined, 'no stack: an upstream failure is not a bug in devutil');
    return line;
  }

  it('answers 504 when the upstream never sends headers, logged once', async () => {
    // Without the proxy's own timeout this would hang: the client's deadline turns that into a failure.
    const r = await fetch(`${w.base}/media.githubusercontent.com/a/b/c.bin`, {
      headers: { 'x-request-id': 'fault-504' },
      signal: AbortSignal.timeout(60_000),
    });
    assert.equal(r.status, 504);
    assert.match(await r.text(), /\n$/);
    const line = await oneFailureLine('fault-504');
    assert.equal(line['status'], 504);
    assert.equal(line['host'], 'media.githubusercontent.com');
    assert.equal(line['reason'], 'upstream timed out');
  });

  it('cuts a body that stalls mid-transfer instead of hanging the client, logged once', async () => {
    const r = await fetch(`${w.base}/objects.githubusercontent.com/x/y.bin`, {
      headers: { 'x-request-id': 'fault-stall' },
    });
    assert.equal(r.status, 200);
    await assert.rejects(r.arrayBuffer(), 'a stalled body must end in an error, not hang');
    const line = await oneFailureLine('fault-stall');
    assert.equal(line['reason'], 'upstream stalled');
    assert.equal(line['complete'], false);
  });

  it('answers 502 when the upstream resets the connection, logged once with the cause', async () => {
    const r = await fetch(`${w.base}/codeload.github.com/owner/repo/tar.gz/refs/heads/main`, {
      headers: { 'x-request-id': 'fault-reset' },
    });
    assert.equal(r.status, 502);
    const line = await oneFailureLine('fault-reset');
    assert.equal(line['status'], 502);
    assert.equal(line['host'], 'codeload.github.com');
    assert.match(String(line['code']), /^(UND_ERR_SOCKET|ECONNRESET)$/);
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
