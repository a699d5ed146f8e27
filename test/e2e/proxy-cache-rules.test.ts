// What the proxy cache must not store or mix up (RFC 9111): Vary: *, Cache-Control private and
// no-store, a variant served to a request whose varying headers differ, and the fragment in the key.
// Vary names the proxy never forwards select nothing. Real server, real clients (curl, and node:http
// for the fragment curl never sends).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { text } from '../fixtures/proxy/internet.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

// Response headers per case, chosen by the path /packages/rules/<case>/<n>.
const CASES: Record<string, Record<string, string>> = {
  plain: { 'cache-control': 'max-age=600, public' },
  'vary-star': { vary: '*' },
  private: { 'cache-control': 'private, max-age=600' },
  'no-store': { 'cache-control': 'no-store' },
  'vary-lang': { vary: 'Accept-Language' },
  'vary-encoding': { vary: 'Accept-Encoding' },
  // Headers the proxy never sends upstream: the answer cannot depend on them.
  'vary-unsent': { vary: 'Origin, Cookie, X-Forwarded-For, Sec-Fetch-Mode' },
  'vary-lang-origin': { vary: 'Accept-Language, Origin' },
};

/** GET through node:http with the request target exactly as given (a `#` included). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${path}` }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy: what the cache never stores or mixes', { skip: toolSkip('curl'), timeout: 180_000 }, () => {
  let w: World;
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { cacheDir: tempDir('devutil-cache-') } } });
    w.net.on('files.pythonhosted.org', (req, res, url) => {
      const kind = url.pathname.split('/')[3] ?? '';
      const lang = String(req.headers['accept-language'] ?? 'none');
      text(res, 200, `${url.pathname}${url.search} lang=${lang}`, {
        'content-type': 'application/octet-stream',
        etag: `"${lang}"`,
        ...CASES[kind],
      });
    });
  });
  after(async () => w?.close());
  const gets = (path: string) => w.net.seen.filter((s) => s.url === path && s.method === 'GET').length;

  // [name, case, request header sets in order, upstream fetches expected]
  const table: [string, string, string[][], number][] = [
    ['stores a plain object once (the control)', 'plain', [[], []], 1],
    ['never stores a response with Vary: *', 'vary-star', [[], []], 2],
    ['never stores Cache-Control: private', 'private', [[], []], 2],
    ['never stores Cache-Control: no-store', 'no-store', [[], []], 2],
    [
      'never stores when the request says Cache-Control: no-store',
      'plain',
      [['-H', 'Cache-Control: no-store'], []],
      2,
    ],
    [
      'keeps one variant per Accept-Language and serves each to its own requests',
      'vary-lang',
      [
        ['-H', 'Accept-Language: en'],
        ['-H', 'Accept-Language: de'],
        ['-H', 'Accept-Language: en'],
        ['-H', 'Accept-Language: de'],
      ],
      2,
    ],
    [
      'serves a stored identity body to any Accept-Encoding (Vary: Accept-Encoding)',
      'vary-encoding',
      [['-H', 'Accept-Encoding: identity'], ['-H', 'Accept-Encoding: br'], []],
      1,
    ],
    [
      'stores one copy when Vary names only headers the proxy does not forward',
      'vary-unsent',
      [
        ['-H', 'Origin: https://a.example', '-H', 'Cookie: s=1'],
        ['-H', 'Origin: https://b.example', '-H', 'X-Forwarded-For: 203.0.113.9'],
        ['-H', 'Sec-Fetch-Mode: cors', '-H', 'Cookie: s=2'],
        [],
      ],
      1,
    ],
    [
      'keys variants on the forwarded names only (Accept-Language, not Origin)',
      'vary-lang-origin',
      [
        ['-H', 'Accept-Language: en', '-H', 'Origin: https://a.example'],
        ['-H', 'Accept-Language: en', '-H', 'Origin: https://b.example'],
        ['-H', 'Accept-Language: de', '-H', 'Origin: https://c.example'],
        ['-H', 'Accept-Language: de'],
      ],
      2,
    ],
  ];
  table.forEach(([name, kind, requests, fetches], i) => {
    it(name, async () => {
      const path = `/packages/rules/${kind}/${i}.bin`;
      for (const h of requests) {
        const r = await curl([...h, `${w.base}/files.pythonhosted.org${path}`]);
        assert.equal(r.status, 200);
        const lang = /Accept-Language: (\w+)/.exec(h.join(' '))?.[1] ?? 'none';
        assert.equal(r.body.toString(), `${path} lang=${lang}`, 'the body of this request’s variant');
      }
      assert.equal(gets(path), fetches);
    });
  });

  it('keys objects without the fragment: #a and #b are one object, fetched once', async () => {
    const path = '/packages/rules/plain/fragment.bin';
    for (const frag of ['#a', '#b', '#c']) {
      const r = await rawGet(w.base, `/files.pythonhosted.org${path}${frag}`);
      assert.equal(r.status, 200);
      assert.equal(r.body, `${path} lang=none`);
    }
    assert.equal(gets(path), 1);
  });

  it('keys objects with their query: ?v=1 and ?v=2 are two objects, each served its own body', async () => {
    const path = '/packages/rules/plain/query.bin';
    for (const q of ['?v=1', '?v=2', '?v=1', '?v=2', '']) {
      const r = await curl([`${w.base}/files.pythonhosted.org${path}${q}`]);
      assert.equal(r.status, 200);
      assert.equal(r.body.toString(), `${path}${q} lang=none`, `the object of ${q || 'no query'}`);
    }
    for (const q of ['?v=1', '?v=2', ''])
      assert.equal(gets(`${path}${q}`), 1, `${q}: fetched once, then cached`);
  });
});
