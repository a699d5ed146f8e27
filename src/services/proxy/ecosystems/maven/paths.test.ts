import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MountError } from '../mount-error.ts';
import { parseMavenPath } from './paths.ts';
import { mavenProfile } from './profile.ts';

const CFG = { mavenRepository: 'https://repo.maven.apache.org/maven2' } as Parameters<
  typeof mavenProfile.target
>[2];

describe('Maven repository paths', { timeout: 10_000 }, () => {
  // [path, kind, cache class]
  const accepted: [string, string, string][] = [
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.jar', 'file', 'immutable'],
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.pom', 'file', 'immutable'],
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.pom.sha1', 'file', 'immutable'],
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0-sources.jar', 'file', 'immutable'],
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.module', 'file', 'immutable'],
    ['/org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.jar.asc', 'file', 'immutable'],
    ['/org/scala-lang/scala-library/2.13.12/scala-library-2.13.12.jar', 'file', 'immutable'],
    ['/com/example/app/1.0-SNAPSHOT/app-1.0-20240102.030405-7.jar', 'file', 'revalidate'],
    ['/com/example/app/1.0-SNAPSHOT/maven-metadata.xml', 'metadata', 'revalidate'],
    ['/org/apache/commons/commons-lang3/maven-metadata.xml', 'metadata', 'revalidate'],
    ['/org/apache/commons/commons-lang3/maven-metadata.xml.sha1', 'metadata', 'revalidate'],
    ['/org/apache/maven/plugins/maven-metadata.xml', 'metadata', 'revalidate'],
    ['/archetype-catalog.xml', 'metadata', 'revalidate'],
    ['/.meta/prefixes.txt', 'metadata', 'revalidate'],
  ];
  for (const [path, kind, cache] of accepted)
    it(`serves ${path} as ${kind}, ${cache}, at the same path upstream`, () => {
      assert.equal(parseMavenPath(path).kind, kind);
      const t = mavenProfile.target('GET', path, CFG);
      assert.ok('url' in t);
      assert.equal(t.url.href, `https://repo.maven.apache.org/maven2${path}`);
      assert.equal(t.route.cache, cache);
      assert.deepEqual(t.route.methods, ['GET', 'HEAD']);
    });

  it('counts artifacts, not their checksums, as downloads', () => {
    const at = (p: string) =>
      mavenProfile.subjects?.(new URL(`https://repo.maven.apache.org/maven2${p}`), CFG);
    assert.deepEqual(at('/org/slf4j/slf4j-api/2.0.9/slf4j-api-2.0.9.jar'), {
      package: 'maven/org.slf4j:slf4j-api',
      file: 'maven/org.slf4j:slf4j-api/2.0.9/slf4j-api-2.0.9.jar',
    });
    assert.deepEqual(at('/org/slf4j/slf4j-api/2.0.9/slf4j-api-2.0.9.jar.sha1'), {
      package: 'maven/org.slf4j:slf4j-api',
      file: undefined,
    });
    assert.equal(at('/org/slf4j/slf4j-api/maven-metadata.xml'), undefined);
  });

  const refused: [string, number][] = [
    ['/org/../../etc/passwd', 400],
    ['/org/%2e%2e/x/1/x-1.jar', 400],
    ['/org/apache/commons%2fcommons-lang3/1/x-1.jar', 400],
    ['/org/foo/bar/1.0/bar-1.0.jar?x=1', 400],
    ['/.git/config', 400],
    ['/org/foo/bar/1.0/.hidden', 400],
    ['/org/foo/bar/1.0/bar 1.0.jar', 400],
    ['/org//bar/1.0/bar-1.0.jar', 400],
    ['/org/foo/bar/1.0/other-1.0.jar', 404],
    ['/org/foo/bar/1.0/bar-1.0', 404],
    ['/org/foo/bar/1.0/bar-1.00.jar', 404],
    ['/org/foo/bar/1.0/', 404],
    ['/maven-metadata.xml', 404],
    ['/bar-1.0.jar', 404],
    ['/', 404],
    [`/${'a/'.repeat(40)}a-1.jar`, 400],
  ];
  for (const [path, status] of refused)
    it(`refuses ${path.slice(0, 50)} with ${status}`, () => {
      assert.throws(
        () => parseMavenPath(path),
        (e: unknown) => e instanceof MountError && e.status === status,
      );
    });
});
