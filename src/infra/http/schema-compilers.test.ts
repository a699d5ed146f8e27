// The shared validators and serializers are compiled on a route's first request: that request is
// still validated (a bad query parameter answers 400 in the route's envelope) and its answer shaped
// by the response schema, and every route schema of the whole server compiles and is checked
// against the meta-schema (compileAllSchemas), so a schema Ajv refuses cannot wait for its first
// caller.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { compileAllSchemas, sharedCompilers } from './schema-compilers.ts';

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
    assert.ok(compileAllSchemas() > 5, 'the routes left some validators to compile');
    assert.equal(compileAllSchemas(), 0, 'each is compiled once');
  });
});

describe('shared schema compilers on a bare instance', { timeout: 60_000 }, () => {
  it("compiles a response serializer on its route's first answer, which it still shapes", async () => {
    const app = Fastify({ schemaController: sharedCompilers, exposeHeadRoutes: false });
    try {
      app.get(
        '/shaped',
        {
          schema: {
            querystring: { type: 'object', properties: { n: { type: 'integer' } } },
            response: { 200: { type: 'object', properties: { a: { type: 'string' } } } },
          },
        },
        async () => ({ a: 'kept', b: 'dropped' }),
      );
      await app.ready();
      // The route's validator and its serializer both wait for the first request.
      assert.equal(compileAllSchemas(), 2);
      const r = await app.inject({ url: '/shaped?n=1' });
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json(), { a: 'kept' });
    } finally {
      await app.close();
    }
  });

  it('reports a route schema the JSON Schema meta-schema refuses', async () => {
    const app = Fastify({ schemaController: sharedCompilers, exposeHeadRoutes: false });
    try {
      app.get(
        '/refused',
        { schema: { querystring: { type: 'object', properties: { s: { type: 'string', minLength: -1 } } } } },
        async () => ({}),
      );
      await app.ready();
      assert.throws(() => compileAllSchemas(), /not valid JSON Schema.*minLength/);
      // Reported once: the servers built after it are not held to it.
      compileAllSchemas();
    } finally {
      await app.close();
    }
  });
});
