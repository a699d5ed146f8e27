// Request ids, one generator for Fastify (genReqId) and the fast lane: the caller's X-Request-Id
// when it is a plain token, else a random prefix per server and a counter, unique across workers
// and restarts for log correlation (a UUID per request cost about 5% of the caller-IP path).
import { randomBytes } from 'node:crypto';

const GIVEN = /^[A-Za-z0-9._-]{1,64}$/;

export type RequestIds = (given: string | string[] | undefined) => string;

export function requestIds(): RequestIds {
  const prefix = `${randomBytes(4).toString('hex')}-`;
  let seq = 0;
  return (given) => (typeof given === 'string' && GIVEN.test(given) ? given : prefix + (++seq).toString(36));
}
