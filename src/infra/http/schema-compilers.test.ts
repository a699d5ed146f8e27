// The shared validators are compiled on a route's first request: that request is still validated
// (a bad query parameter answers 400 in the route's envelope), and every route schema of the whole
// server compiles (compileAllValidators), so a schema Ajv refuses cannot wait for its first caller.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { compileAllValidators } from './schema-compilers.ts';

describe('shared schema compilers', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer();
    await app.ready();
  });
  after(async () => {
    await app?.close();
  });

  it("validates a route's first request", async () => {
    const bad = await app.inject({ url: '/rest/api/v1/ip/port/80?format=xml' });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.match(bad.body, /format/);
    const again = await app.inject({ url: '/rest/api/v1/ip/port/80?format=xml' });
    assert.equal(again.statusCode, 400);
    assert.match(again.body, /format/);
  });

  it('compiles every route schema of the server', () => {
    assert.ok(compileAllValidators() > 5, 'the routes left some validators to compile');
    assert.equal(compileAllValidators(), 0, 'each is compiled once');
  });
});
