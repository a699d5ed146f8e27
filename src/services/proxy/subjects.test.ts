import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { subjectsOf } from './subjects.ts';

describe('subjectsOf', () => {
  const rows: [string, string, { repo?: string; package?: string; file?: string }][] = [
    [
      'github.com',
      '/o/r/releases/download/v1/asset.bin',
      { repo: 'o/r', file: 'github.com/o/r/releases/download/v1/asset.bin' },
    ],
    ['github.com', '/o/r.git/info/refs', { repo: 'o/r' }],
    ['github.com', '/o/r/git-upload-pack', { repo: 'o/r' }],
    [
      'raw.githubusercontent.com',
      '/o/r/main/README.md',
      { repo: 'o/r', file: 'raw.githubusercontent.com/o/r/main/README.md' },
    ],
    ['codeload.github.com', '/o/r/tar.gz/refs/tags/v1', { repo: 'o/r' }],
    ['api.github.com', '/repos/o/r/releases/latest', { repo: 'o/r' }],
    ['api.github.com', '/users/o', {}],
    ['github.com', '/login/oauth', {}],
    ['github.com', '/o', {}],
    ['pypi.org', '/simple/Devutil_Hello/', { package: 'pypi/devutil-hello' }],
    ['pypi.org', '/pypi/requests/json', { package: 'pypi/requests' }],
    [
      'files.pythonhosted.org',
      '/packages/ab/cd/ef/Devutil.Hello-1.0-py3-none-any.whl',
      {
        package: 'pypi/devutil-hello',
        file: 'files.pythonhosted.org/packages/ab/cd/ef/Devutil.Hello-1.0-py3-none-any.whl',
      },
    ],
    [
      'deb.debian.org',
      '/debian/pool/main/d/devutil-hello/devutil-hello_1.0_all.deb',
      {
        package: 'debian/devutil-hello',
        file: 'deb.debian.org/debian/pool/main/d/devutil-hello/devutil-hello_1.0_all.deb',
      },
    ],
    ['deb.debian.org', '/debian/dists/bookworm/InRelease', {}],
    ['deb.debian.org', '/debian/pool/main/d/devutil-hello/', {}],
  ];
  for (const [host, path, want] of rows) {
    it(`reads ${host}${path}`, () => {
      const got = Object.fromEntries(
        Object.entries(subjectsOf(host, path)).filter(([, v]) => v !== undefined),
      );
      assert.deepEqual(got, want);
    });
  }
});
