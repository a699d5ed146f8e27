import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MountError } from '../mount-error.ts';
import { parseNpmPath, upstreamPath } from './paths.ts';

describe('npm mount paths', { timeout: 10_000 }, () => {
  const accepted: [string, string, string][] = [
    ['/left-pad', 'packument', '/left-pad'],
    ['/@devutil%2fscoped', 'packument', '/@devutil%2fscoped'],
    ['/@devutil%2Fscoped', 'packument', '/@devutil%2fscoped'],
    ['/@devutil/scoped', 'packument', '/@devutil%2fscoped'],
    ['/JSONStream', 'packument', '/JSONStream'],
    ['/left-pad/1.3.0', 'packument', '/left-pad/1.3.0'],
    ['/left-pad/latest', 'packument', '/left-pad/latest'],
    ['/left-pad/-/left-pad-1.3.0.tgz', 'tarball', '/left-pad/-/left-pad-1.3.0.tgz'],
    ['/@devutil/scoped/-/scoped-2.0.0-beta.1.tgz', 'tarball', '/@devutil/scoped/-/scoped-2.0.0-beta.1.tgz'],
    ['/-/v1/search?text=left&size=2', 'search', '/-/v1/search?text=left&size=2'],
    ['/-/ping', 'ping', '/-/ping'],
    ['/-/npm/v1/security/advisories/bulk', 'audit', '/-/npm/v1/security/advisories/bulk'],
  ];
  for (const [path, kind, upstream] of accepted)
    it(`maps ${path} to ${upstream}`, () => {
      const r = parseNpmPath(path);
      assert.equal(r.kind, kind);
      assert.equal(upstreamPath(r), upstream);
    });

  const refused: [string, number][] = [
    ['/..', 400],
    ['/../../etc/passwd', 400],
    ['/left-pad/..', 400],
    ['/left-pad/-/..%2f..%2fsecret.tgz', 400],
    ['/left-pad/-/x/../../y.tgz', 404],
    ['/left%2fpad', 400],
    ['/left%2epad', 400],
    ['/%2e%2e', 400],
    ['/@scope%2f..', 400],
    ['/@scope%2f%2e%2e', 400],
    ['/@..%2fx', 400],
    ['/.hidden', 400],
    ['/_private', 400],
    ['/left pad', 400],
    [`/${'a'.repeat(215)}`, 400],
    ['/left-pad/-/left-pad-1.0.0.tar', 400],
    ['/left-pad/1.0.0/extra', 404],
    ['/-/user/org.couchdb.user:alice', 404],
    ['/-/whoami', 404],
    ['/', 404],
  ];
  for (const [path, status] of refused)
    it(`refuses ${path.slice(0, 40)} with ${status}`, () => {
      assert.throws(
        () => parseNpmPath(path),
        (e: unknown) => e instanceof MountError && e.status === status,
      );
    });
});
