// The pipelining gate on a bare Fastify server over real sockets: a queued request runs only once
// the answers before it are done, queued requests of a closed connection never run, and reading
// stops past the read-ahead cap until answers are done.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { pipelineGate } from './pipelining.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('pipelining gate', () => {
  let app: FastifyInstance | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await app?.close();
  });

  /** A server whose GET /:n answers after `hold(n)` resolves; `events` records starts and ends. */
  async function server(maxDepth: number, hold: (n: string) => Promise<void>, events: string[]) {
    app = Fastify();
    app.addHook('onRequest', pipelineGate(maxDepth));
    app.addHook('onRequest', (req, _reply, done) => {
      events.push(`hook ${(req.params as { n?: string }).n ?? req.url.slice(1)}`);
      done();
    });
    app.get<{ Params: { n: string } }>('/:n', async (req) => {
      events.push(`start ${req.params.n}`);
      await hold(req.params.n);
      events.push(`end ${req.params.n}`);
      return `answer ${req.params.n}\n`;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const s = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
    s.on('error', () => {});
    sockets.push(s);
    await new Promise((r) => s.once('connect', r));
    return s;
  }
  const get = (n: string | number) => `GET /${n} HTTP/1.1\r\nHost: x\r\n\r\n`;

  it('runs a queued request only once the answer before it is done', async () => {
    const events: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => {
      release = r;
    });
    const s = await server(16, (n) => (n === '1' ? first : Promise.resolve()), events);
    let got = '';
    s.on('data', (c) => {
      got += c;
    });
    s.write(get(1) + get(2) + get(3));
    await sleep(300);
    assert.deepEqual(events, ['hook 1', 'start 1'], 'requests 2 and 3 wait, not even their hooks ran');
    release();
    for (let i = 0; i < 100 && !got.includes('answer 3'); i++) await sleep(20);
    assert.deepEqual(events, [
      'hook 1',
      'start 1',
      'end 1',
      'hook 2',
      'start 2',
      'end 2',
      'hook 3',
      'start 3',
      'end 3',
    ]);
    assert.ok(
      got.indexOf('answer 1') < got.indexOf('answer 2') && got.indexOf('answer 2') < got.indexOf('answer 3'),
    );
  });

  it('never runs the requests still queued when the connection closes', async () => {
    const events: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => {
      release = r;
    });
    const s = await server(16, (n) => (n === '1' ? first : Promise.resolve()), events);
    s.write(get(1) + get(2) + get(3));
    await sleep(300);
    s.destroy();
    await sleep(300);
    // The first answer ends with nobody to take it; the queued ones never start.
    release();
    await sleep(300);
    assert.deepEqual(events, ['hook 1', 'start 1', 'end 1']);
  });

  it('stops reading a connection past the read-ahead cap until answers are done', async () => {
    const events: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => {
      release = r;
    });
    let gated = 0;
    const s = await server(2, (n) => (n === '1' ? first : Promise.resolve()), events);
    // Counted in the server's own 'request' events: how many requests it read.
    app?.server.on('request', () => gated++);
    // One request per write, apart, so each can be read (or not) on its own.
    for (let i = 1; i <= 8; i++) {
      s.write(get(i));
      await sleep(60);
    }
    await sleep(300);
    assert.ok(gated <= 4, `read ${gated} requests with a cap of 2 pending`);
    release();
    let got = '';
    s.on('data', (c) => {
      got += c;
    });
    for (let i = 0; i < 200 && !got.includes('answer 8'); i++) await sleep(20);
    assert.equal(gated, 8, 'the rest is read once answers are done');
    assert.match(got, /answer 8/);
  });
});
