// The /v2/ grammar: both name forms, Docker Hub's library/ default, containerd's ?ns=, tags and
// digests, and a table of what is refused before any registry is asked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../../../infra/http/errors.ts';
import { DEFAULT_REGISTRIES } from './config.ts';
import { parseRequest, Registries } from './reference.ts';

const regs = new Registries(DEFAULT_REGISTRIES);
const D = `sha256:${'a'.repeat(64)}`;

describe('oci request parsing', () => {
  it('reads the path form, the bare-host form and containerd ns', () => {
    const m = parseRequest('/v2/docker.io/alpine/manifests/3.20', regs);
    assert.deepEqual(m, {
      kind: 'manifest',
      name: {
        registry: 'docker.io',
        host: 'registry-1.docker.io',
        repo: 'library/alpine',
        client: 'docker.io/alpine',
      },
      tag: '3.20',
      digest: null,
    });
    const bare = parseRequest('/v2/library/alpine/manifests/latest', regs);
    assert.equal(
      bare.kind === 'manifest' && `${bare.name.host}/${bare.name.repo}`,
      'registry-1.docker.io/library/alpine',
    );
    const ns = parseRequest(`/v2/o/img/blobs/${D}?ns=ghcr.io`, regs);
    assert.equal(
      ns.kind === 'blob' && `${ns.name.registry}/${ns.name.repo}@${ns.digest.hex.length}`,
      'ghcr.io/o/img@64',
    );
    const k8s = parseRequest('/v2/registry.k8s.io/pause/manifests/3.9', regs);
    assert.equal(k8s.kind === 'manifest' && k8s.name.repo, 'pause', 'no library/ outside Docker Hub');
    const alias = parseRequest('/v2/index.docker.io/library/x/manifests/1', regs);
    assert.equal(alias.kind === 'manifest' && alias.name.registry, 'docker.io');
    assert.deepEqual(parseRequest('/v2/', regs), { kind: 'base' });
    assert.deepEqual(parseRequest('/v2/token?scope=x', regs), { kind: 'token' });
    const tags = parseRequest('/v2/quay.io/a/b/tags/list?n=10', regs);
    assert.equal(tags.kind === 'tags' && tags.query, 'n=10');
  });

  const refused: [string, string, number, string][] = [
    ['dot-dot', '/v2/docker.io/library/../x/manifests/1', 400, 'NAME_INVALID'],
    ['an encoded slash', '/v2/docker.io/library%2fx/manifests/1', 400, 'NAME_INVALID'],
    ['an encoded dot', '/v2/docker.io/%2e%2e/x/manifests/1', 400, 'NAME_INVALID'],
    ['an empty component', '/v2/docker.io/library//x/manifests/1', 400, 'NAME_INVALID'],
    ['upper case', '/v2/docker.io/Library/x/manifests/1', 400, 'NAME_INVALID'],
    ['a backslash', '/v2/docker.io/library\\x/manifests/1', 400, 'NAME_INVALID'],
    ['a unicode letter', '/v2/docker.io/librаry/x/manifests/1', 400, 'NAME_INVALID'],
    ['a tag with a slash-like escape', '/v2/docker.io/library/x/manifests/a%2Fb', 400, 'NAME_INVALID'],
    ['a tag starting with a dot', '/v2/docker.io/library/x/manifests/.hidden', 400, 'TAG_INVALID'],
    ['a tag of 129 characters', `/v2/docker.io/library/x/manifests/${'t'.repeat(129)}`, 400, 'TAG_INVALID'],
    ['a truncated digest', '/v2/docker.io/library/x/blobs/sha256:abc', 400, 'DIGEST_INVALID'],
    ['an upper-case digest', `/v2/docker.io/library/x/blobs/sha256:${'A'.repeat(64)}`, 400, 'DIGEST_INVALID'],
    ['another algorithm', `/v2/docker.io/library/x/blobs/sha384:${'a'.repeat(96)}`, 400, 'DIGEST_INVALID'],
    ['an unserved registry', '/v2/registry.example.com/x/manifests/1', 403, 'DENIED'],
    ['a registry with a port', '/v2/localhost:5000/x/manifests/1', 400, 'NAME_INVALID'],
    ['an ns that is not a host', '/v2/x/manifests/1?ns=../../etc', 400, 'NAME_INVALID'],
    ['uploads', '/v2/docker.io/library/x/blobs/uploads/', 405, 'UNSUPPORTED'],
    ['an unknown endpoint', '/v2/docker.io/library/x/other/1', 404, 'NAME_UNKNOWN'],
    ['the catalog', '/v2/_catalog', 404, 'NAME_UNKNOWN'],
    ['a name over 255 characters', `/v2/${'a/'.repeat(128)}b/manifests/1`, 400, 'NAME_INVALID'],
  ];
  for (const [what, path, status, code] of refused) {
    it(`refuses ${what} with ${status} ${code}`, () => {
      assert.throws(
        () => parseRequest(path, regs),
        (e: unknown) => e instanceof AppError && e.status === status && e.code === code,
      );
    });
  }
});
