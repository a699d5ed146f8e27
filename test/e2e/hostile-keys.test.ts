// Hostile-input class: request-chosen words that name Object.prototype members. Every route that
// looks a format, extension, keyword or mode up in a table answers them exactly as it answers an
// unknown word (same status, same content type, same envelope), never 5xx or another type.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { BOT, CHATS, FakeBotApi } from '../fixtures/telegram/fake-bot-api.ts';
import { BUDGETS_OFF } from '../fixtures/telegram/overrides.ts';
import { buildTestServer } from '../helpers/server.ts';

const PROTO = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupSetter__',
];
const UNKNOWN = 'zzunknown';
const HELLO = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000'; // Bob -> Alice : hello
const MD5 = '0bc83cb571cd1c50ba6f3e8a78ef1346';

const text = (url: string, payload = 'Bob -> Alice'): InjectOptions => ({
  method: 'POST',
  url,
  payload,
  headers: { 'content-type': 'text/plain' },
});
const json = (url: string, payload: object): InjectOptions => ({ method: 'POST', url, payload });
const relay = (extra: object) =>
  json('/rest/api/v1/telegram', { apiKey: BOT.token, chatId: CHATS['user']!.id, msgText: 'hi', ...extra });

// [route, request for the word t]
const ROUTES: [string, (t: string) => InjectOptions][] = [
  ['PlantUML GET format', (t) => ({ url: `/plantuml/${t}/${HELLO}` })],
  ['PlantUML GET format with index', (t) => ({ url: `/plantuml/${t}/0/${HELLO}` })],
  ['PlantUML POST format', (t) => text(`/plantuml/${t}`)],
  ['PlantUML POST format with index', (t) => text(`/plantuml/${t}/1`)],
  ['Kroki GET format', (t) => ({ url: `/plantuml/plantuml/${t}/${HELLO}` })],
  ['Kroki POST format', (t) => text(`/plantuml/plantuml/${t}`)],
  ['Kroki JSON output_format', (t) => json('/plantuml/', { diagram_source: 'A -> B', output_format: t })],
  ['image format', (t) => ({ url: `/rest/api/v1/image?format=${t}&width=16&height=16` })],
  ['avatar extension', (t) => ({ url: `/avatar/${MD5}.${t}` })],
  ['avatar d= keyword', (t) => ({ url: `/avatar/${MD5}?d=${t}&f=y` })],
  ['avatar default= keyword', (t) => ({ url: `/avatar/${MD5}?default=${t}&forcedefault=y` })],
  ['avatar rating', (t) => ({ url: `/avatar/${MD5}?r=${t}` })],
  ['avatar hash', (t) => ({ url: `/avatar/${t}` })],
  ['caller IP format (legacy)', (t) => ({ url: `/api/ip?format=${t}` })],
  ['caller IP format (v1)', (t) => ({ url: `/rest/api/v1/ip?format=${t}` })],
  ['relay parseMode', (t) => relay({ parseMode: t })],
  ['relay msgText.parse_mode', (t) => relay({ msgText: { text: 'hi', parse_mode: t }, escape: true })],
  ['web asset name', (t) => ({ url: `/assets/${t}` })],
  ['web Accept-Encoding', (t) => ({ url: '/', headers: { 'accept-encoding': t } })],
  ['file key', (t) => ({ url: `/api/file/${t}` })],
  ['proxy host', (t) => ({ url: `/proxy/${t}/x` })],
  ['proxy git service', (t) => ({ url: `/proxy/github.com/o/r/info/refs?service=${t}` })],
  ['Host header', (t) => ({ url: '/', headers: { host: t } })],
];

function upload(key: string, filename: string): InjectOptions {
  const b = 'XkeyX';
  return {
    method: 'POST',
    url: `/api/file/${key}`,
    headers: { 'content-type': `multipart/form-data; boundary=${b}` },
    payload: `--${b}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\nplain words\r\n--${b}--\r\n`,
  };
}

type Answer = { status: number; type: string; shape: string };

function answer(r: Awaited<ReturnType<FastifyInstance['inject']>>): Answer {
  const type = String(r.headers['content-type'] ?? '').split(';')[0]!;
  let shape = '';
  if (type === 'application/json')
    shape = Object.keys(JSON.parse(r.body) as object)
      .sort()
      .join(',');
  return { status: r.statusCode, type, shape };
}

describe('Object.prototype member names as request words', () => {
  let app: FastifyInstance;
  let fake: FakeBotApi;
  before(async () => {
    fake = await FakeBotApi.start();
    app = await buildTestServer({
      overrides: { egress: { resolve: [fake.resolve] }, telegram: { ...BUDGETS_OFF, apiBase: fake.apiBase } },
    });
  });
  after(async () => {
    await app?.close();
    await fake?.close();
  });

  for (const [route, req] of ROUTES) {
    it(`${route}: answers every prototype name like an unknown word`, async () => {
      const want = answer(await app.inject(req(UNKNOWN)));
      assert.ok(want.status < 500, `the unknown word itself answered ${want.status}`);
      for (const t of PROTO) {
        const r = await app.inject(req(t));
        assert.deepEqual(answer(r), want, `${t}: ${r.statusCode} ${r.body.slice(0, 120)}`);
      }
    });
  }

  it('file names: a prototype name as the extension is sniffed like an unknown one', async () => {
    const types = new Set<string>();
    for (const t of [UNKNOWN, ...PROTO]) {
      const key = `proto-${t.replace(/_/g, 'u')}`;
      const up = await app.inject(upload(key, `notes.${t}`));
      assert.equal(up.statusCode, 200, up.body);
      const r = await app.inject({ url: `/api/file/${key}` });
      assert.equal(r.statusCode, 200);
      types.add(String(r.headers['content-type']));
    }
    assert.deepEqual([...types], ['text/plain; charset=utf-8']);
  });
});
