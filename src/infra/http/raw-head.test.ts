// A prepared head goes out as writeHead(status, array) sends the same headers: the same fields (in
// its own order), the status, Node's Date and keep-alive lines, the body or none (304, HEAD), and
// the connection stays usable. Heads Node must read itself are not prepared.
import assert from 'node:assert/strict';
import { Agent, createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RawHead } from './raw-head.ts';

const FIXED = [
  'content-type',
  'application/octet-stream',
  'etag',
  '"abc"',
  'cache-control',
  'public, max-age=60',
  'content-length',
  '5',
  'access-control-allow-origin',
  '*',
];
const NOT_MODIFIED = FIXED.slice(2, 6);
const EXPIRES = 'Tue, 01 Jul 2025 10:00:00 GMT';

interface Got {
  status: number;
  /** name: value lines, lower-case names, sorted, without Date. */
  fields: string[];
  body: string;
  socket: unknown;
}

describe('prepared response heads', { timeout: 30_000 }, () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const sent = new Map<string, (res: ServerResponse) => boolean>();
  /** What each path's send() returned (true: written as it meant to). */
  const wrote = new Map<string, boolean>();
  const server = createServer((req, res) => {
    const send = sent.get(req.url ?? '');
    if (!send) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const body = Buffer.from('hello');
    wrote.set(req.url ?? '', send(res));
    res.end(req.method === 'HEAD' || res.statusCode === 304 ? undefined : body);
  });
  let port = 0;
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    agent.destroy();
    await new Promise((r) => server.close(r));
  });

  function get(path: string, method = 'GET'): Promise<Got> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const fields: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            const name = res.rawHeaders[i]!.toLowerCase();
            if (name !== 'date') fields.push(`${name}: ${res.rawHeaders[i + 1]}`);
          }
          resolve({
            status: res.statusCode ?? 0,
            fields: fields.sort(),
            body: Buffer.concat(chunks).toString(),
            socket: req.socket,
          });
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** The same answer through writeHead(status, array) and through the prepared head. */
  async function both(name: string, status: number, fixed: string[], lines: string[], method = 'GET') {
    const head = RawHead.of(fixed);
    assert.ok(head, name);
    const rendered = lines.map((l, i) => (i % 2 ? `: ${l}` : `\r\n${l}`)).join('');
    sent.set(`/array/${name}`, (res) => {
      res.writeHead(status, ['x-request-id', 'id-1', ...lines, ...fixed]);
      return true;
    });
    sent.set(`/raw/${name}`, (res) => head.write(res, status, 'id-1', rendered));
    const a = await get(`/array/${name}`, method);
    const b = await get(`/raw/${name}`, method);
    assert.deepEqual(b, { ...a, socket: b.socket }, name);
    assert.equal(wrote.get(`/raw/${name}`), true, `${name}: written from the prepared head`);
    return b;
  }

  it('sends what writeHead sends: 200, 304, HEAD, with per-answer lines', async () => {
    const ok = await both('ok', 200, FIXED, ['expires', EXPIRES]);
    assert.equal(ok.body, 'hello');
    assert.ok(ok.fields.includes('content-length: 5'));
    assert.ok(ok.fields.includes('connection: keep-alive'));
    assert.ok(ok.fields.includes(`expires: ${EXPIRES}`));
    assert.ok(ok.fields.includes('x-request-id: id-1'));
    const nm = await both('nm', 304, NOT_MODIFIED, []);
    assert.equal(nm.status, 304);
    assert.equal(nm.body, '');
    const head = await both(
      'head',
      200,
      FIXED,
      ['ratelimit-limit', '30', 'ratelimit-remaining', '29'],
      'HEAD',
    );
    assert.equal(head.body, '');
    assert.ok(head.fields.includes('ratelimit-remaining: 29'));
    // One connection for all of them: each answer's length was known to Node.
    assert.equal(ok.socket, head.socket);
  });

  it('prepares a Content-Disposition head, which goes out as writeHead sends it', async () => {
    const fixed = [...FIXED, 'content-disposition', 'inline; filename="0bc83cb5.png"'];
    const a = await both('disposition', 200, fixed, ['expires', EXPIRES]);
    assert.ok(a.fields.includes('content-disposition: inline; filename="0bc83cb5.png"'));
    // Outside printable ASCII it is still left to writeHead.
    assert.equal(RawHead.of(['content-disposition', 'inline; filename="caf\u00e9.png"']), null);
  });

  it('takes a length per answer', async () => {
    const head = RawHead.of(['content-type', 'text/plain']);
    assert.ok(head);
    sent.set('/len', (res) => head.write(res, 200, 'id-2', '', '5'));
    const a = await get('/len');
    assert.equal(wrote.get('/len'), true);
    assert.equal(a.body, 'hello');
    assert.ok(a.fields.includes('content-length: 5'));
  });

  it('leaves a response with headers already set to writeHead', () => {
    const head = RawHead.of(FIXED);
    assert.ok(head);
    sent.set('/set', (res) => {
      res.setHeader('x-other', '1');
      return !head.write(res, 200, 'id-3', '');
    });
    return get('/set').then((a) => {
      assert.equal(wrote.get('/set'), true);
      assert.ok(a.fields.includes('x-other: 1'));
    });
  });

  it('does not prepare heads Node reads or values it would refuse', () => {
    for (const fixed of [
      ['connection', 'close'],
      ['transfer-encoding', 'chunked'],
      ['x-request-id', 'fixed'],
      ['x-name', 'caf\u00e9'],
      ['x-name', 'a\r\nb: c'],
      ['bad name', 'v'],
      ['Content-Type', 'text/plain'],
      ['content-length', '5', 'content-length', '6'],
    ])
      assert.equal(RawHead.of(fixed), null, fixed.join(' '));
    assert.ok(RawHead.of(['x-name', 'plain value\twith tab']));
  });
});
