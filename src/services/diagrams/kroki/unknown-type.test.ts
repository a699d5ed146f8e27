// An unknown diagram type (a mistyped Kroki path such as POST /plantuml/nosuch/svg) answers 404 in
// Kroki's error shape chosen by Accept, as Kroki's other errors do: JSON for a client asking for JSON,
// one line of text otherwise. No engine is needed to say so.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { assertNoInternals } from '../../../../test/helpers/leaks.ts';
import { buildTestServer } from '../../../../test/helpers/server.ts';

const kroki = (s: string) => deflateSync(s, { level: 9 }).toString('base64url');
const JSON_ACCEPT = { accept: 'application/json' };

describe('Kroki: an unknown diagram type', { timeout: 60_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { diagrams: { prestart: false } } });
  });
  after(async () => {
    await app?.close();
  });

  const jsonError = (body: string) => JSON.parse(body) as { error: { code: number; message: string } };

  it('answers POST /plantuml/nosuch/svg with Accept: application/json in JSON, naming the types', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/plantuml/nosuch/svg',
      payload: 'a -> b',
      headers: { 'content-type': 'text/plain', ...JSON_ACCEPT },
    });
    assert.equal(r.statusCode, 404);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    const e = jsonError(r.body);
    assert.equal(e.error.code, 404);
    assert.match(
      e.error.message,
      /unknown format or diagram type nosuch; .*diagram types: plantuml, c4plantuml, /,
    );
    assertNoInternals(r.body, 'unknown diagram type');
  });

  it('answers GET, POST with a JSON body and POST with the format from Accept alike', async () => {
    const get = await app.inject({ url: `/plantuml/nosuch/svg/${kroki('a')}`, headers: JSON_ACCEPT });
    assert.equal(get.statusCode, 404);
    assert.equal(jsonError(get.body).error.code, 404);
    const body = await app.inject({
      method: 'POST',
      url: '/plantuml/nosuch/svg',
      payload: JSON.stringify({ diagram_source: 'a' }),
      headers: { 'content-type': 'application/json', ...JSON_ACCEPT },
    });
    assert.equal(body.statusCode, 404);
    assert.match(jsonError(body.body).error.message, /diagram type nosuch/);
    // No format segment and an empty body: the wrong type is still what the client is told.
    const bare = await app.inject({ method: 'POST', url: '/plantuml/nosuch', headers: JSON_ACCEPT });
    assert.equal(bare.statusCode, 404);
    assert.match(jsonError(bare.body).error.message, /diagram type nosuch/);
  });

  it('answers in text without Accept, and with an error card for an <img>', async () => {
    const text = await app.inject({ method: 'POST', url: '/plantuml/nosuch/svg', payload: 'a' });
    assert.equal(text.statusCode, 404);
    assert.match(String(text.headers['content-type']), /^text\/plain/);
    assert.match(text.body, /^Error 404: unknown format or diagram type nosuch; /);
    const img = await app.inject({
      url: `/plantuml/nosuch/svg/${kroki('a')}`,
      headers: { accept: 'image/avif,image/webp,image/svg+xml,image/*,*/*;q=0.8' },
    });
    assert.equal(img.statusCode, 404);
    assert.equal(img.headers['content-type'], 'image/svg+xml');
    assert.match(img.body, /diagram type nosuch/);
  });

  it('answers an image index that is not a number in the same shape', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/plantuml/svg/nosuch',
      payload: 'a -> b',
      headers: { 'content-type': 'text/plain', ...JSON_ACCEPT },
    });
    assert.equal(r.statusCode, 404);
    assert.match(jsonError(r.body).error.message, /nosuch is not an image number/);
  });
});
