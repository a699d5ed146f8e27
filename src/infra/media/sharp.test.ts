// A server whose sharp cannot be loaded (missing or broken native build): image and avatar requests
// answer 503 saying so, in their own envelopes, and everything else keeps serving.
import assert from 'node:assert/strict';
import * as mod from 'node:module';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';

/** Node 22.15+/24/26: a resolve hook stands in for an install without sharp. */
type Next = (specifier: string, context: object) => unknown;
type Hooks = { resolve: (specifier: string, context: object, next: Next) => unknown };
// (Typed here: the installed @types/node predates module.registerHooks.)
const registerHooks = (mod as unknown as { registerHooks?: (hooks: Hooks) => void }).registerHooks;
const HAS_HOOKS = typeof registerHooks === 'function';
if (registerHooks)
  registerHooks({
    resolve(specifier, context, next) {
      if (specifier === 'sharp')
        throw Object.assign(new Error("Cannot find package 'sharp'"), { code: 'ERR_MODULE_NOT_FOUND' });
      return next(specifier, context);
    },
  });

const MD5 = '0bc83cb571cd1c50ba6f3e8a78ef1346';

describe('without sharp', { skip: !HAS_HOOKS && 'no module.registerHooks on this runtime' }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
  });
  after(() => app.close());

  it('answers a random image with 503 naming the reason, in the v1 envelope', async () => {
    const r = await app.inject({ url: '/rest/api/v1/image' });
    assert.equal(r.statusCode, 503);
    assert.deepEqual(r.json(), {
      status: 0,
      message: 'image processing is unavailable on this server',
      data: null,
    });
  });

  it('answers an avatar with 503 naming the reason (no fallback that would need sharp too)', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await app.inject({ url: `/avatar/${MD5}?d=identicon` });
      assert.equal(r.statusCode, 503);
      assert.match(r.body, /image processing is unavailable on this server/);
    }
  });

  it('keeps serving the utilities that need no pixels', async () => {
    assert.equal((await app.inject({ url: '/rest/api/v1/ip' })).statusCode, 200);
    assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200);
  });
});
