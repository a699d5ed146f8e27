// The include fetcher without Java: allow-list, address guard, freshness window and conditional
// revalidation against the loopback include fixture (reached by a host override, as in production).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { type IncludeServer, startIncludeServer } from '../../../../test/fixtures/plantuml/include-server.ts';
import { CLOSED_PORT } from '../../../../test/helpers/ports.ts';
import { createEgress, type Egress } from '../../../infra/egress/client.ts';
import { IncludeFetcher, type IncludeOptions } from './includes.ts';

const INC = 'http://include.test';

describe('URL includes fetched by the server', { timeout: 60_000 }, () => {
  let inc: IncludeServer;
  let http: Egress;
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
  before(async () => {
    inc = await startIncludeServer();
    http = createEgress({
      resolve: [`include.test=${new URL(inc.url).host}`, 'inside.test=10.0.0.1:80'],
      timeoutMs: 3000,
    });
  });
  after(async () => {
    await http.close();
    await inc.close();
  });

  const fetcher = (o: Partial<IncludeOptions> = {}) =>
    new IncludeFetcher({
      http,
      profile: 'ALLOWLIST',
      allowlist: [`${INC}/ok/`, 'http://inside.test/'],
      freshMs: 0,
      timeoutMs: 3000,
      maxBytes: 1024,
      memoryBytes: 1024 * 1024,
      log,
      ...o,
    });
  const downloads = (path: string) => (inc.hits.get(path) ?? 0) - (inc.notModified.get(path) ?? 0);

  it('revalidates a stale include with a conditional GET and keeps its hash while it is unchanged', async () => {
    const f = fetcher();
    inc.files.set('/ok/a.puml', 'A -> B : one\n');
    const first = await f.fetch(`${INC}/ok/a.puml`);
    assert.equal(first.status, 200);
    assert.equal(first.body.toString(), 'A -> B : one\n');
    const again = await f.fetch(`${INC}/ok/a.puml`);
    assert.equal(again.hash, first.hash);
    assert.equal(inc.notModified.get('/ok/a.puml'), 1, 'answered 304 to If-None-Match');
    assert.equal(downloads('/ok/a.puml'), 1);
    assert.equal(await f.current([{ url: `${INC}/ok/a.puml`, hash: first.hash }]), true);

    inc.files.set('/ok/a.puml', 'A -> B : two\n');
    const changed = await f.fetch(`${INC}/ok/a.puml`);
    assert.equal(changed.body.toString(), 'A -> B : two\n');
    assert.notEqual(changed.hash, first.hash);
    assert.equal(await f.current([{ url: `${INC}/ok/a.puml`, hash: first.hash }]), false);
  });

  it('does not ask the include server again inside the freshness window', async () => {
    const f = fetcher({ freshMs: 60_000 });
    inc.files.set('/ok/fresh.puml', 'A -> B\n');
    await f.fetch(`${INC}/ok/fresh.puml`);
    inc.files.set('/ok/fresh.puml', 'A -> C\n');
    const again = await f.fetch(`${INC}/ok/fresh.puml`);
    assert.equal(again.body.toString(), 'A -> B\n');
    assert.equal(inc.hits.get('/ok/fresh.puml'), 1);
  });

  it('fetches one include once for concurrent readers', async () => {
    const f = fetcher();
    inc.files.set('/ok/burst.puml', 'A -> B\n');
    const all = await Promise.all(Array.from({ length: 5 }, () => f.fetch(`${INC}/ok/burst.puml`)));
    assert.ok(all.every((a) => a.status === 200));
    assert.equal(inc.hits.get('/ok/burst.puml'), 1);
  });

  it('passes a missing include on as missing, and notices when it appears', async () => {
    const f = fetcher();
    const gone = await f.fetch(`${INC}/ok/absent.txt`);
    assert.equal(gone.status, 404);
    inc.files.set('/ok/absent.txt', 'A -> B\n');
    assert.equal(await f.current([{ url: `${INC}/ok/absent.txt`, hash: gone.hash }]), false);
  });

  it('keeps a diagram rendered from an include while the include server is unreachable', async () => {
    // Nothing listens there.
    const down = createEgress({ resolve: [`down.test=127.0.0.1:${CLOSED_PORT}`], timeoutMs: 500 });
    try {
      const g = fetcher({ http: down, allowlist: ['http://down.test/'], timeoutMs: 500 });
      const a = await g.fetch('http://down.test/x.puml');
      assert.equal(a.status, 502);
      assert.equal(await g.current([{ url: 'http://down.test/x.puml', hash: 'sha256:earlier' }]), true);
    } finally {
      await down.close();
    }
  });

  const refusals: [string, string, Partial<IncludeOptions>][] = [
    ['outside the allow-list', `${INC}/other/x.puml`, {}],
    ['with user info', 'http://user@include.test/ok/x.puml', {}],
    ['not http(s)', 'file:///etc/passwd', {}],
    ['under the SANDBOX profile', `${INC}/ok/x.puml`, { profile: 'SANDBOX' }],
    ['over the size cap', `${INC}/ok/big.puml`, { maxBytes: 1024 }],
  ];
  for (const [name, url, o] of refusals) {
    it(`refuses an include ${name}`, async () => {
      inc.files.set('/ok/big.puml', 'x'.repeat(4096));
      const before = inc.hits.get('/other/x.puml') ?? 0;
      const a = await fetcher(o).fetch(url);
      assert.equal(a.status, 403);
      assert.equal(a.body.length, 0);
      assert.equal(inc.hits.get('/other/x.puml') ?? 0, before);
    });
  }

  it('refuses an allow-listed host that resolves to a private address (the egress guard)', async () => {
    warnings.length = 0;
    const a = await fetcher().fetch('http://inside.test/x.puml');
    assert.equal(a.status, 403);
    assert.match(warnings.join(''), /non-public/);
  });

  it('lets any public URL through under the LEGACY profile, but not a loopback one', async () => {
    const f = fetcher({ profile: 'LEGACY', allowlist: [] });
    assert.equal((await f.fetch(`${INC}/ok/a.puml`)).status, 200);
    const before = inc.hits.get('/ok/a.puml');
    assert.equal((await f.fetch(`${inc.url}/ok/a.puml`)).status, 403);
    assert.equal(inc.hits.get('/ok/a.puml'), before);
  });
});
