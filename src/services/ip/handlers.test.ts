// The IP handlers called alone, without a server: the text and JSON answers, a bad ?ip= refused,
// and ?details=1 answered 503 when the details database cannot be read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../infra/http/errors.ts';
import type { IpGeo } from './geo.ts';
import { type IpDeps, type IpReq, legacyIp, v1Ip } from './handlers.ts';
import type { Reach } from './reach.ts';

/** A reply that keeps the headers it is given (one by one, as an object, or as a type). */
function reply() {
  const r = {
    seen: {} as Record<string, string>,
    header(k: string, v: string) {
      r.seen[k.toLowerCase()] = v;
      return r;
    },
    headers(h: Record<string, string>) {
      for (const [k, v] of Object.entries(h)) r.header(k, v);
      return r;
    },
    type(t: string) {
      return r.header('content-type', t);
    },
  };
  return r;
}

const geo = {
  lookup: async () => {
    throw new Error('no database');
  },
} as unknown as IpGeo;
const d: IpDeps = {
  version: 'V1.2',
  legacyTail: '},"version":"V1.2"}',
  geo,
  reach: {} as Reach,
  dbRetrySec: 7,
};
const req = (query: IpReq['query'], accept = '') =>
  ({ query, headers: { accept }, clientIp: '203.0.113.9' }) as unknown as IpReq;

describe('IP handlers called alone', { timeout: 10_000 }, () => {
  it('answers the caller in the legacy JSON shape, not cached, readable from another origin', () => {
    const r = reply();
    const body = legacyIp(d, req({}), r as unknown as FastifyReply);
    assert.deepEqual(JSON.parse(String(body)), {
      status: 1,
      msg: 'success',
      data: { ip: '203.0.113.9' },
      version: 'V1.2',
    });
    assert.equal(r.seen['cache-control'], 'no-store');
    assert.equal(r.seen['access-control-allow-origin'], '*');
    assert.equal(r.seen['content-type'], 'application/json; charset=utf-8');
  });

  it('answers the bare address and a newline to Accept: text/plain', () => {
    const r = reply();
    assert.equal(v1Ip(d, req({}, 'text/plain'), r as unknown as FastifyReply), '203.0.113.9\n');
    assert.equal(r.seen['content-type'], 'text/plain; charset=utf-8');
  });

  it('refuses a ?ip= that is not an address with 400', () => {
    assert.throws(
      () => v1Ip(d, req({ ip: '999.1.1.1' }), reply() as unknown as FastifyReply),
      (e: unknown) => e instanceof AppError && e.status === 400,
    );
  });

  it('answers ?details=1 with 503 and the retry time when the database cannot be read', async () => {
    await assert.rejects(
      Promise.resolve(v1Ip(d, req({ details: '1' }), reply() as unknown as FastifyReply)),
      (e: unknown) => e instanceof AppError && e.status === 503 && e.headers?.['retry-after'] === 7,
    );
  });
});
