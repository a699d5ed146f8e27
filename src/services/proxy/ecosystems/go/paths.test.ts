import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MountError } from '../mount-error.ts';
import { parseGoPath, unescapeModule, upstreamPath } from './paths.ts';

const DBS = ['sum.golang.org'];

describe('Go module proxy paths', { timeout: 10_000 }, () => {
  const accepted: [string, string, string][] = [
    ['/golang.org/x/text/@v/list', 'list', '/golang.org/x/text/@v/list'],
    ['/golang.org/x/text/@latest', 'latest', '/golang.org/x/text/@latest'],
    ['/golang.org/x/text/@v/v0.14.0.info', 'info', '/golang.org/x/text/@v/v0.14.0.info'],
    ['/golang.org/x/text/@v/v0.14.0.mod', 'mod', '/golang.org/x/text/@v/v0.14.0.mod'],
    ['/golang.org/x/text/@v/v0.14.0.zip', 'zip', '/golang.org/x/text/@v/v0.14.0.zip'],
    ['/github.com/!burnt!sushi/toml/@v/v1.3.2.zip', 'zip', '/github.com/!burnt!sushi/toml/@v/v1.3.2.zip'],
    ['/github.com/%21burnt%21sushi/toml/@v/list', 'list', '/github.com/!burnt!sushi/toml/@v/list'],
    [
      '/example.com/m/@v/v0.0.0-20240102030405-abcdef123456.mod',
      'mod',
      '/example.com/m/@v/v0.0.0-20240102030405-abcdef123456.mod',
    ],
    ['/example.com/m/@v/v2.0.0+incompatible.zip', 'zip', '/example.com/m/@v/v2.0.0+incompatible.zip'],
    ['/example.com/m/@v/master.info', 'info', '/example.com/m/@v/master.info'],
    ['/example.com/m/@v/v1.2.info', 'info', '/example.com/m/@v/v1.2.info'],
    ['/example.com/m/@v/release-1.x.info', 'info', '/example.com/m/@v/release-1.x.info'],
    ['/example.com/m/@v/console.info', 'info', '/example.com/m/@v/console.info'],
    ['/sumdb/sum.golang.org/lookup/golang.org/x/text@v0.14.0', 'sumdb', '/lookup/golang.org/x/text@v0.14.0'],
    ['/sumdb/sum.golang.org/tile/8/0/000', 'sumdb', '/tile/8/0/000'],
    ['/sumdb/sum.golang.org/tile/8/1/x001/234.p/7', 'sumdb', '/tile/8/1/x001/234.p/7'],
    ['/sumdb/sum.golang.org/tile/8/data/000.p/2', 'sumdb', '/tile/8/data/000.p/2'],
    ['/sumdb/sum.golang.org/latest', 'sumdb', '/latest'],
  ];
  for (const [path, kind, upstream] of accepted)
    it(`maps ${path} to ${upstream}`, () => {
      const r = parseGoPath(path, DBS);
      assert.equal(r.kind, kind);
      assert.ok(r.kind !== 'supported');
      assert.equal(upstreamPath(r), upstream);
    });

  it('answers the sumdb probe for configured databases only', () => {
    assert.deepEqual(parseGoPath('/sumdb/sum.golang.org/supported', DBS), {
      kind: 'supported',
      db: 'sum.golang.org',
    });
    assert.throws(
      () => parseGoPath('/sumdb/evil.example/supported', DBS),
      (e: MountError) => e.status === 404,
    );
  });

  it('treats full tiles as immutable and partial tiles, lookups and latest as not', () => {
    const imm = (p: string) => {
      const r = parseGoPath(p, DBS);
      return r.kind === 'sumdb' && r.immutable;
    };
    assert.equal(imm('/sumdb/sum.golang.org/tile/8/0/000'), true);
    assert.equal(imm('/sumdb/sum.golang.org/tile/8/0/000.p/3'), false);
    assert.equal(imm('/sumdb/sum.golang.org/latest'), false);
  });

  it('unescapes capitals', () => {
    assert.equal(unescapeModule('github.com/!burnt!sushi/toml'), 'github.com/BurntSushi/toml');
  });

  const refused: [string, number][] = [
    ['/golang.org/x/../../etc/@v/list', 400],
    ['/golang.org/x/%2e%2e/@v/list', 400],
    ['/golang.org%2fx%2ftext/@v/list', 400],
    ['/golang.org/x/Text/@v/list', 400],
    ['/localhost/@v/list', 400],
    ['/-evil.com/m/@v/list', 400],
    ['/golang.org/x/text/@v/1.0.0.zip', 400],
    ['/golang.org/x/text/@v/v1.0.zip', 400],
    ['/golang.org/x/text/@v/v01.0.0.mod', 400],
    ['/golang.org/x/text/@v/master.zip', 400],
    ['/golang.org/x/text/@v/v1.0.0.info?x=1', 400],
    ['/golang.org/x/text/@v/v1.0.0%2einfo', 400],
    ['/golang.org/x/text/@v/..%2f..%2fx.info', 400],
    ['/golang.org/x/text/@v/v1.0.0.tar', 404],
    ['/golang.org/x/text', 404],
    ['/sumdb/sum.golang.org/tile/8/0/../../x', 404],
    ['/sumdb/sum.golang.org/lookup/golang.org/x/text@1.0', 400],
    ['/sumdb/evil.example/latest', 404],
    // Queries the go command never sends (module.EscapeVersion refuses them).
    ['/golang.org/x/text/@v/v1.0.0..info', 400],
    ['/golang.org/x/text/@v/...info', 400],
    ['/golang.org/x/text/@v/..info', 400],
    ['/golang.org/x/text/@v/con.info', 400],
    ['/golang.org/x/text/@v/!l!p!t1.x.info', 400],
  ];
  for (const [path, status] of refused)
    it(`refuses ${path} with ${status}`, () => {
      assert.throws(
        () => parseGoPath(path, DBS),
        (e: unknown) => e instanceof MountError && e.status === status,
      );
    });
});
