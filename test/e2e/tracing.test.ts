// OpenTelemetry traces against an OTLP/HTTP receiver stand-in (test/helpers/otlp.ts): a proxied
// request's trace holds the server span and the upstream span under it (joined to the caller's
// traceparent, which the upstream then sees), renders and blob store operations get their spans,
// secrets stay out of attributes, and with tracing off nothing is sent and no traceparent added.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Internet, startInternet } from '../fixtures/proxy/internet.ts';
import { OtlpReceiver, type OtlpSpan } from '../helpers/otlp.ts';
import { type Running, startTestServer, tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const SERVER = 2;
const CLIENT = 3;
const SECRET = 'Tq7secretQueryValue99';
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('traces over OTLP', { timeout: 120_000, skip: toolSkip('openssl', ['version']) }, () => {
  let net: Internet | undefined;
  let recv: OtlpReceiver | undefined;
  let on: Running | undefined;
  /** The traceparent header of each upstream request, in order. */
  const upstreamSaw: (string | undefined)[] = [];
  const proxyEnv = () => ({
    DEVUTIL_PROXY_RESOLVE: net!.resolve.join(','),
    DEVUTIL_PROXY_UPSTREAM_CA: net!.caFile,
  });

  before(async () => {
    net = await startInternet(tempDir('devutil-otel-'));
    net.on('raw.githubusercontent.com', (req, res) => {
      const tp = req.headers.traceparent;
      upstreamSaw.push(Array.isArray(tp) ? tp.join(',') : tp);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('hello from upstream\n');
    });
    recv = await OtlpReceiver.start();
    on = await startTestServer({
      env: {
        ...proxyEnv(),
        OTEL_EXPORTER_OTLP_ENDPOINT: recv.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%20123',
        OTEL_SERVICE_NAME: 'devutil-test',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
  });
  after(async () => {
    await on?.close();
    await recv?.close();
    await net?.close();
  });

  const childOf = (parent: OtlpSpan, name: string) => (spans: OtlpSpan[]) =>
    spans.find((s) => s.parentSpanId === parent.spanId && s.name === name);
  const serverSpan = (path: string) => (spans: OtlpSpan[]) =>
    spans.find((s) => s.kind === SERVER && s.attributes['url.path'] === path);

  it("puts a proxied request's upstream span under its server span, in the caller's trace", async () => {
    const trace = hex(16);
    const caller = hex(8);
    const res = await fetch(`${on!.url}/proxy/raw.githubusercontent.com/o/r/main/README?token=${SECRET}`, {
      headers: { traceparent: `00-${trace}-${caller}-01` },
    });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hello from upstream\n');

    const server = await recv!.waitFor('server span', (ss) =>
      ss.find((s) => s.traceId === trace && s.kind === SERVER),
    );
    const upstream = await recv!.waitFor('upstream span', (ss) =>
      ss.find((s) => s.traceId === trace && s.kind === CLIENT),
    );
    assert.equal(server.parentSpanId, caller, 'the server span continues the caller’s span');
    assert.equal(upstream.parentSpanId, server.spanId, 'the upstream span is a child of the server span');
    assert.equal(server.service, 'devutil-test');
    assert.match(server.name, /^GET \/proxy\//);
    assert.equal(server.attributes['http.route'], server.name.slice('GET '.length));
    assert.equal(server.attributes['http.request.method'], 'GET');
    assert.equal(server.attributes['http.response.status_code'], 200);
    assert.equal(server.attributes['url.path'], '/proxy/raw.githubusercontent.com/o/r/main/README');
    assert.equal(upstream.name, 'GET');
    assert.equal(upstream.attributes['server.address'], 'raw.githubusercontent.com');
    assert.equal(upstream.attributes['http.response.status_code'], 200);
    assert.equal(upstreamSaw.at(-1), `00-${trace}-${upstream.spanId}-01`, 'traceparent sent upstream');
    // The query's secret is redacted in both spans (url.query, url.full) and never exported.
    assert.match(String(server.attributes['url.query']), /^token=\[redacted\]$/);
    assert.match(String(upstream.attributes['url.full']), /token=\[redacted\]/);
    assert.ok(!recv!.requests.some((r) => r.body.includes(SECRET)), 'a secret reached the collector');
    // Exports carry the configured headers, percent-decoded.
    assert.equal(recv!.requests[0]?.headers['x-collector-key'], 'k 123');
    assert.match(recv!.requests[0]?.contentType ?? '', /^application\/json/);
  });

  it('starts a new trace for a request without traceparent', async () => {
    const res = await fetch(`${on!.url}/proxy/raw.githubusercontent.com/o/r/main/root`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const server = await recv!.waitFor(
      'server span',
      serverSpan('/proxy/raw.githubusercontent.com/o/r/main/root'),
    );
    assert.equal(server.parentSpanId, '');
    const upstream = await recv!.waitFor('upstream span', (ss) =>
      ss.find((s) => s.parentSpanId === server.spanId && s.kind === CLIENT),
    );
    assert.equal(upstream.traceId, server.traceId);
    assert.equal(upstreamSaw.at(-1), `00-${server.traceId}-${upstream.spanId}-01`);
  });

  it('records nothing for a caller that did not sample, and tells the upstream so', async () => {
    const unsampled = hex(16);
    const res = await fetch(`${on!.url}/proxy/raw.githubusercontent.com/o/r/main/unsampled`, {
      headers: { traceparent: `00-${unsampled}-${hex(8)}-00` },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.match(upstreamSaw.at(-1) ?? '', new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
    // A sampled request after it: once its spans are in, the unsampled one's would have been too.
    const later = await fetch(`${on!.url}/proxy/raw.githubusercontent.com/o/r/main/after-unsampled`);
    await later.arrayBuffer();
    await recv!.waitFor(
      'server span',
      serverSpan('/proxy/raw.githubusercontent.com/o/r/main/after-unsampled'),
    );
    assert.ok(!recv!.spans.some((s) => s.traceId === unsampled));
  });

  it('gives blob store operations their spans under the request', async () => {
    const form = new FormData();
    form.append('file', new Blob(['traced bytes\n']), 'traced.txt');
    const up = await fetch(`${on!.url}/api/file/traced-key`, { method: 'POST', body: form });
    assert.equal(up.status, 200, await up.text());
    const down = await fetch(`${on!.url}/api/file/traced-key`);
    assert.equal(await down.text(), 'traced bytes\n');

    const post = await recv!.waitFor('upload span', serverSpan('/api/file/traced-key'));
    assert.equal(post.name, 'POST /api/file/:key');
    const put = await recv!.waitFor('blob put span', childOf(post, 'blob put'));
    assert.equal(put.traceId, post.traceId);
    assert.equal(put.attributes['devutil.blob.backend'], 'fs');
    assert.equal(put.attributes['devutil.blob.op'], 'put');
    assert.ok(!JSON.stringify(put.attributes).includes('traced-key'), 'a blob span names its key');
    const get = await recv!.waitFor('download span', (ss) =>
      ss.find((s) => s.name === 'GET /api/file/:key' && s.attributes['url.path'] === '/api/file/traced-key'),
    );
    const read = await recv!.waitFor('blob read span', (ss) =>
      ss.find((s) => s.parentSpanId === get.spanId && /^blob (get|head)$/.test(s.name)),
    );
    assert.equal(read.attributes['devutil.blob.found'], true);
  });

  it('gives a diagram render its span under the request', async () => {
    const res = await fetch(`${on!.url}/plantuml/nomnoml/svg`, { method: 'POST', body: '[traced]->[span]' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.match(await res.text(), /<svg/);
    const post = await recv!.waitFor('render request span', serverSpan('/plantuml/nomnoml/svg'));
    assert.equal(post.name, 'POST /plantuml/:type/:fmt');
    const render = await recv!.waitFor('render span', childOf(post, 'render nomnoml'));
    assert.equal(render.attributes['devutil.render.language'], 'nomnoml');
    assert.equal(render.attributes['devutil.render.format'], 'svg');
    assert.equal(render.attributes['devutil.render.cached'], false);
  });

  it('gives a generated avatar its render span', async () => {
    // A hash no other test file uses as a secret: in a batch, secrets registered by a file before
    // this one are still redacted here ('a' x 32 is rate-limit.test.ts's avatar token: the span's
    // url.path read /avatar/[redacted]).
    const hash = hex(16);
    const res = await fetch(`${on!.url}/avatar/${hash}?d=identicon&s=64&f=y`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const get = await recv!.waitFor('avatar request span', serverSpan(`/avatar/${hash}`));
    assert.equal(get.name, 'GET /avatar/:file');
    const render = await recv!.waitFor('avatar render span', childOf(get, 'render avatar'));
    assert.equal(render.attributes['devutil.render.size'], 64);
  });

  it('exports OTLP protobuf by default, to a full traces URL', async () => {
    const other = await OtlpReceiver.start();
    let proto: Running | undefined;
    try {
      proto = await startTestServer({
        env: {
          ...proxyEnv(),
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${other.url}/v1/traces`,
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
      });
      const trace = hex(16);
      const res = await fetch(`${proto.url}/proxy/raw.githubusercontent.com/o/r/main/proto`, {
        headers: { traceparent: `00-${trace}-${hex(8)}-01` },
      });
      await res.arrayBuffer();
      // No protobuf decoder here: the ids travel as raw bytes, the names as UTF-8.
      const id = Buffer.from(trace, 'hex');
      const got = await other.until('protobuf export with the trace', () =>
        other.requests.find((r) => r.body.includes(id) && r.body.includes('raw.githubusercontent.com')),
      );
      assert.equal(got.path, '/v1/traces');
      assert.match(got.contentType, /^application\/x-protobuf/);
      assert.ok(got.body.includes('devutil'), 'service.name devutil');
    } finally {
      await proto?.close();
      await other.close();
    }
  });

  it('with tracing off, adds no traceparent and exports nothing', async () => {
    // Everything but a collector URL: tracing stays off.
    const off = await startTestServer({
      env: { ...proxyEnv(), OTEL_SERVICE_NAME: 'devutil-off', OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    try {
      const res = await fetch(`${off.url}/proxy/raw.githubusercontent.com/o/r/main/off`);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.equal(upstreamSaw.at(-1), undefined, 'traceparent sent with tracing off');
      const form = new FormData();
      form.append('file', new Blob(['untraced\n']), 'u.txt');
      assert.equal(
        (await fetch(`${off.url}/api/file/untraced-key`, { method: 'POST', body: form })).status,
        200,
      );
    } finally {
      await off.close();
    }
    // The traced server keeps exporting to the receiver meanwhile: nothing from devutil-off.
    assert.ok(!recv!.spans.some((s) => s.service === 'devutil-off'));
    assert.ok(
      !recv!.spans.some((s) => s.attributes['url.path'] === '/proxy/raw.githubusercontent.com/o/r/main/off'),
    );
  });
});
