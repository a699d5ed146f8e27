// Body rewrites: PyPI index links and LFS batch hrefs go through the proxy; everything else stays.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_ALLOW } from './config.ts';
import { Links } from './links.ts';
import { rewriteLfs, rewritePypi } from './rewrite.ts';
import { AllowList } from './target.ts';

const links = new Links('https://p.example/proxy', new AllowList(DEFAULT_ALLOW));

describe('proxy rewrites', () => {
  it('rewrites PyPI HTML links and keeps hashes and data attributes', () => {
    const html =
      '<a href="https://files.pythonhosted.org/packages/a/b/x.whl#sha256=abc" data-dist-info-metadata="sha256=def">x</a>';
    const out = rewritePypi(Buffer.from(html), 'text/html; charset=utf-8', links);
    assert.equal(
      out,
      '<a href="https://p.example/proxy/files.pythonhosted.org/packages/a/b/x.whl#sha256=abc" data-dist-info-metadata="sha256=def">x</a>',
    );
  });

  it('rewrites PEP 691 JSON urls and leaves other content types alone', () => {
    const json = JSON.stringify({
      files: [{ url: 'https://files.pythonhosted.org/packages/x.whl', hashes: { sha256: 'a' } }],
    });
    const out = rewritePypi(Buffer.from(json), 'application/vnd.pypi.simple.v1+json', links);
    assert.equal(
      JSON.parse(out ?? '').files[0].url,
      'https://p.example/proxy/files.pythonhosted.org/packages/x.whl',
    );
    assert.equal(rewritePypi(Buffer.from(json), 'application/octet-stream', links), null);
  });

  it('rewrites LFS hrefs on allowed hosts only, keeping header and expiry', () => {
    const batch = {
      transfer: 'basic',
      objects: [
        {
          oid: 'a',
          size: 1,
          actions: {
            download: {
              href: 'https://objects.githubusercontent.com/lfs/a?sig=1',
              header: { Authorization: 'RemoteAuth t' },
              expires_in: 3600,
            },
          },
        },
        { oid: 'b', size: 1, actions: { download: { href: 'https://evil.example.com/b' } } },
        { oid: 'c', size: 1, error: { code: 404, message: 'missing' } },
      ],
    };
    const out = JSON.parse(rewriteLfs(Buffer.from(JSON.stringify(batch)), links) ?? '');
    assert.equal(
      out.objects[0].actions.download.href,
      'https://p.example/proxy/objects.githubusercontent.com/lfs/a?sig=1',
    );
    assert.deepEqual(out.objects[0].actions.download.header, { Authorization: 'RemoteAuth t' });
    assert.equal(out.objects[0].actions.download.expires_in, 3600);
    assert.equal(out.objects[1].actions.download.href, 'https://evil.example.com/b');
    assert.deepEqual(out.objects[2].error, { code: 404, message: 'missing' });
    assert.equal(rewriteLfs(Buffer.from('not json'), links), null);
  });
});
