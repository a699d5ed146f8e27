// Small bodies have a total deadline, uploads do not, and rate limits answer before any body byte.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Running, startTestServer } from '../../../test/helpers/server.ts';

interface Exchange {
  /** Everything the server sent. */
  data: string;
  /** Body bytes the client had sent when the first answer byte arrived (-1: no answer). */
  sentAtAnswer: number;
  closed: boolean;
}

/**
 * Sends `head`, then `body` one byte every `dripMs` (all at once when 0), and collects the answer
 * until the server closes the connection or `waitMs` passes.
 */
function exchange(
  port: number,
  head: string,
  body: Buffer,
  dripMs: number,
  waitMs = 15_000,
): Promise<Exchange> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    let data = '';
    let sent = 0;
    let sentAtAnswer = -1;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(deadline);
      sock.destroy();
      resolve({ data, sentAtAnswer, closed });
    };
    const deadline = setTimeout(() => finish(false), waitMs);
    sock.on('error', () => {});
    sock.on('data', (c) => {
      if (sentAtAnswer === -1) sentAtAnswer = sent;
      data += c;
    });
    sock.once('close', () => finish(true));
    sock.once('connect', () => {
      sock.write(head);
      if (dripMs === 0) {
        sock.write(body);
        sent = body.length;
        return;
      }
      timer = setInterval(() => {
        if (sent < body.length && !sock.destroyed) sock.write(body.subarray(sent, ++sent));
      }, dripMs);
    });
  });
}

const post = (path: string, type: string, length: number, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('small request bodies have a total deadline', () => {
  let srv: Running;
  before(async () => {
    srv = await startTestServer({ overrides: { server: { bodyTimeoutMs: 1000 } } });
  });
  after(() => srv.close());

  it('answers a Telegram relay JSON body trickled past the deadline with 408 in its envelope, then closes', async () => {
    const body = Buffer.from(JSON.stringify({ apiKey: '1:x', chatId: '1', msgText: 'x'.repeat(300) }));
    const r = await exchange(
      srv.port,
      post('/rest/api/v1/telegram', 'application/json', body.length),
      body,
      100,
    );
    assert.match(r.data, /^HTTP\/1\.1 408 /);
    assert.ok(r.sentAtAnswer < body.length, 'answered while the body was still arriving');
    const json = JSON.parse(r.data.slice(r.data.indexOf('\r\n\r\n') + 4));
    assert.deepEqual(Object.keys(json).sort(), ['data', 'msg', 'status']);
    assert.equal(json.status, 0);
    assert.equal(r.closed, true, 'the connection is closed after the answer');
  });

  it('answers diagram source POSTed a byte at a time with 408', async () => {
    const body = Buffer.from(`@startuml\n${'Bob -> Alice : hello\n'.repeat(20)}@enduml\n`);
    const r = await exchange(srv.port, post('/plantuml/svg', 'text/plain', body.length), body, 100);
    assert.match(r.data, /^HTTP\/1\.1 408 /);
    assert.match(r.data, /request body not received within 1s/);
    assert.equal(r.closed, true);
  });

  it('answers a JSON body trickled to a path no route has with 408 (the not-found handler reads it)', async () => {
    const body = Buffer.from(JSON.stringify({ x: 'y'.repeat(300) }));
    const r = await exchange(srv.port, post('/no/such/route', 'application/json', body.length), body, 100);
    assert.match(r.data, /^HTTP\/1\.1 408 /);
    assert.ok(r.sentAtAnswer < body.length, 'answered while the body was still arriving');
  });

  it('does not hold a file upload to it: a slow upload completes', async () => {
    const boundary = 'b0undary';
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\n` +
        `Content-Type: text/plain\r\n\r\n${'slow upload\n'.repeat(2)}\r\n--${boundary}--\r\n`,
    );
    // ~190 bytes at one per 15 ms: well past the 1 s deadline.
    const head = post(
      '/api/file/slow-upload',
      `multipart/form-data; boundary=${boundary}`,
      body.length,
      'Connection: close\r\n',
    );
    const r = await exchange(srv.port, head, body, 15);
    assert.match(r.data, /^HTTP\/1\.1 200 /);
    assert.equal(r.sentAtAnswer, body.length);
  });

  it('leaves a body sent at once alone', async () => {
    const body = Buffer.from('{}');
    const r = await exchange(
      srv.port,
      post('/rest/api/v1/telegram', 'application/json', body.length, 'Connection: close\r\n'),
      body,
      0,
    );
    assert.match(r.data, /^HTTP\/1\.1 400 /);
  });
});

describe('rate limits are charged before the body is read', () => {
  let srv: Running;
  before(async () => {
    srv = await startTestServer({
      overrides: {
        // A long body deadline: an answer before any body byte can only come from the limiter.
        server: { bodyTimeoutMs: 60_000 },
        telegram: { rateLimit: '1/min' },
        diagrams: { rateLimit: '1/min' },
        files: { rateLimit: '1/min' },
        avatar: { adminRateLimit: '1/min', adminToken: 'admin-secret-for-tests' },
        proxy: { rateLimit: '1/min' },
      },
    });
  });
  after(() => srv.close());

  // [method, path, content type, envelope, a request that spends the budget without a render]
  const routes: [string, string, string, RegExp, string?][] = [
    ['POST', '/rest/api/v1/telegram', 'application/json', /"msg":"rate limit exceeded/],
    ['POST', '/plantuml/svg', 'text/plain', /^rate limit exceeded/m, '/plantuml/nosuchformat/x'],
    ['POST', '/api/file/limited', 'multipart/form-data; boundary=x', /"success":false/],
    ['PUT', '/avatar/00000000000000000000000000000000', 'image/png', /^rate limit exceeded/m],
    [
      'POST',
      '/proxy/upload.example/simple/',
      'application/x-git-upload-pack-request',
      /^rate limit exceeded/m,
    ],
  ];
  for (const [method, path, type, envelope, spend] of routes) {
    it(`answers ${method} ${path} over budget with 429 before any body byte`, async () => {
      // The first request spends the budget, whatever its outcome.
      await srv.app.inject({ method, url: spend ?? path, headers: { 'content-type': type }, payload: 'x' });
      const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 4096\r\n\r\n`;
      const r = await exchange(srv.port, head, Buffer.alloc(4096, 0x61), 60_000, 10_000);
      assert.match(r.data, /^HTTP\/1\.1 429 /);
      assert.match(r.data, /retry-after: \d+/i);
      assert.match(r.data, envelope);
      assert.equal(r.sentAtAnswer, 0, `answered after ${r.sentAtAnswer} body bytes`);
    });
  }
});
