// An editor-style client (curl) against the listening server: the /plantuml mount on the base host,
// the dedicated PlantUML host, conditional GETs, and the allow-listed /proxy.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { type IncludeServer, startIncludeServer } from '../../../../test/fixtures/plantuml/include-server.ts';
import { type Running, startTestServer } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { encodeDiagram } from './encoding.ts';

interface CurlResult {
  status: number;
  headers: Record<string, string[]>;
  body: Buffer;
}

/** curl in a child process, asynchronously: the server under test runs in this event loop. */
function curl(url: string, args: string[] = []): Promise<CurlResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      ['-sS', '-D', '-', '--max-time', '60', ...args, url],
      { encoding: 'buffer', maxBuffer: 32 * 1024 * 1024 },
      (err, out, stderr) => {
        if (err) return reject(new Error(`curl failed: ${stderr.toString()}`));
        const end = out.indexOf('\r\n\r\n');
        const head = out.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string[]> = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          const k = line.slice(0, i).trim().toLowerCase();
          headers[k] = [...(headers[k] ?? []), line.slice(i + 1).trim()];
        }
        resolve({ status: Number(head[0]?.split(' ')[1]), headers, body: out.subarray(end + 4) });
      },
    );
  });
}

const skip = toolSkip('java', ['-version']) || toolSkip('curl');
const HELLO = 'SyfFKj2rKt3CoKnELR1Io4ZDoSa70000';

describe('PlantUML over real HTTP', { skip, timeout: 180_000 }, () => {
  let srv: Running;
  let inc: IncludeServer;
  before(async () => {
    inc = await startIncludeServer();
    srv = await startTestServer({
      overrides: {
        // /proxy fetches through the egress client: loopback only by an override, as in production.
        egress: { resolve: [`diagrams.test=${new URL(inc.url).host}`] },
        diagrams: { workers: 1, host: 'plantuml.devutil.test', proxyHosts: ['diagrams.test'] },
      },
    });
  });
  after(async () => {
    await srv?.close();
    await inc?.close();
  });

  it('gives an editor client SVG and PNG for the server URLs under /plantuml', async () => {
    const svg = await curl(`${srv.url}/plantuml/svg/${HELLO}`);
    assert.equal(svg.status, 200);
    assert.deepEqual(svg.headers['content-type'], ['image/svg+xml']);
    assert.match(svg.body.toString(), /<svg[^>]*>[\s\S]*Alice/);
    const png = await curl(`${srv.url}/plantuml/png/${HELLO}`);
    assert.equal(png.status, 200);
    assert.equal(png.body.subarray(1, 4).toString(), 'PNG');
    const viaPost = await curl(`${srv.url}/plantuml/svg`, [
      '--data-binary',
      'Bob -> Alice : hello',
      '-H',
      'Content-Type: text/plain; charset=utf-8',
    ]);
    assert.equal(viaPost.body.toString(), svg.body.toString());
  });

  it('serves the same API at the root of the PlantUML host', async () => {
    const r = await curl(`${srv.url}/svg/${HELLO}`, ['-H', 'Host: plantuml.devutil.test']);
    assert.equal(r.status, 200);
    assert.match(r.body.toString(), /<svg/);
    const base = await curl(`${srv.url}/svg/${HELLO}`);
    assert.equal(base.status, 404); // not on the base host's root
  });

  it('sends the error headers and a 304 over the wire', async () => {
    const bad = await curl(
      `${srv.url}/plantuml/svg/${encodeDiagram('@startuml\nA -> B\nnot valid (\n@enduml')}`,
    );
    assert.equal(bad.status, 400);
    assert.ok(bad.headers['x-plantuml-diagram-error']?.[0]?.includes('Syntax Error'));
    assert.deepEqual(bad.headers['x-plantuml-diagram-error-line'], ['2']);
    const ok = await curl(`${srv.url}/plantuml/png/${HELLO}`);
    const etag = ok.headers['etag']?.[0] ?? '';
    const again = await curl(`${srv.url}/plantuml/png/${HELLO}`, ['-H', `If-None-Match: ${etag}`]);
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
  });

  it('renders /proxy?src= only from allow-listed hosts, with the server URL guards', async () => {
    const ok = await curl(
      `${srv.url}/plantuml/proxy?fmt=svg&src=${encodeURIComponent('http://diagrams.test/remote.puml')}`,
    );
    assert.equal(ok.status, 200, ok.body.toString().slice(0, 200));
    assert.match(ok.body.toString(), /Carol/);
    assert.equal(inc.hits.get('/remote.puml'), 1);
    const cases: [string, number][] = [
      [`http://localhost:${inc.url.split(':')[2]}/remote.puml`, 403],
      [`http://user@${inc.url.slice(7)}/remote.puml`, 400],
      ['file:///etc/passwd', 400],
      ['gopher://127.0.0.1/x', 400],
      ['not a url', 400],
    ];
    for (const [src, status] of cases) {
      const r = await curl(`${srv.url}/plantuml/proxy?src=${encodeURIComponent(src)}`);
      assert.equal(r.status, status, src);
      assert.doesNotMatch(r.body.toString(), /root:/);
    }
    assert.equal(inc.hits.get('/remote.puml'), 1);
  });
});
