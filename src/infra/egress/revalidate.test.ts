// Outbound revalidation against a real upstream on loopback (reached through a resolve override,
// as utilities reach their fixtures): what the conditional GET sends and how its answers read.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createEgress, type Egress } from './client.ts';
import { conditionalGet, conditionalHeaders, validatorsOf } from './revalidate.ts';

describe('outbound revalidation', () => {
  let server: Server;
  let http: Egress;
  let seen: IncomingHttpHeaders = {};
  const url = new URL('http://upstream.test/a.puml');

  before(async () => {
    server = createServer((req, res) => {
      seen = req.headers;
      // 304 whenever asked with the current tag, and also (wrongly) to a plain GET of /always-304.
      if (req.headers['if-none-match'] === '"v2"' || req.url === '/always-304') {
        res.writeHead(304, { etag: '"v2"' }).end();
        return;
      }
      res.writeHead(200, { etag: '"v2"', 'last-modified': 'Tue, 01 Jul 2025 10:00:00 GMT' }).end('body');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    http = createEgress({ resolve: [`upstream.test=127.0.0.1:${port}`], timeoutMs: 5000 });
  });
  after(async () => {
    await http.close();
    server.close();
  });

  it('confirms a current copy with a 304 and sends its validators', async () => {
    const r = await conditionalGet(
      http,
      { url, headers: { 'user-agent': 'ua' } },
      { etag: '"v2"', lastModified: 'Mon, 30 Jun 2025 10:00:00 GMT' },
    );
    assert.equal(r.notModified, true);
    assert.equal(seen['if-none-match'], '"v2"');
    assert.equal(seen['if-modified-since'], 'Mon, 30 Jun 2025 10:00:00 GMT');
    assert.equal(seen['user-agent'], 'ua');
  });

  it('hands back a changed copy with its new validators', async () => {
    const r = await conditionalGet(http, { url, headers: {} }, { etag: '"v1"', lastModified: null });
    assert.equal(r.notModified, false);
    assert.ok(!r.notModified);
    assert.equal(r.res.statusCode, 200);
    assert.equal(await r.res.body.text(), 'body');
    assert.equal(seen['if-modified-since'], undefined);
    assert.deepEqual(validatorsOf(r.res.headers), {
      etag: '"v2"',
      lastModified: 'Tue, 01 Jul 2025 10:00:00 GMT',
    });
  });

  it('sends a plain GET without a stored copy, and a 304 to it is not a confirmation', async () => {
    const r = await conditionalGet(
      http,
      { url: new URL('http://upstream.test/always-304'), headers: {} },
      null,
    );
    assert.equal(seen['if-none-match'], undefined);
    assert.equal(r.notModified, false);
    assert.ok(!r.notModified);
    assert.equal(r.res.statusCode, 304);
    await r.res.body.dump();
  });

  it('keeps only validators that look like validators', () => {
    assert.deepEqual(validatorsOf({ etag: ['"a"', '"b"'], 'last-modified': 'x'.repeat(300) }), {
      etag: null,
      lastModified: null,
    });
    assert.deepEqual(conditionalHeaders({ etag: '', lastModified: 'Tue, 01 Jul 2025 10:00:00 GMT' }), {
      'if-modified-since': 'Tue, 01 Jul 2025 10:00:00 GMT',
    });
    assert.deepEqual(conditionalHeaders(null), {});
  });
});
