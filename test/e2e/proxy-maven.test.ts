// Debian's Maven through the maven mount: `mvn dependency:get` fetches an artifact and its
// dependency from a fake Maven Central (real layout, .sha1 checked with checksumPolicy=fail) through
// devutil, the mirror of `central` that setup.sh wrote into the user's settings.xml; a second fetch into an
// empty local repository comes from devutil's cache, so each file went upstream once. The plugin
// itself comes from Debian's own repository (/usr/share/maven-repo, file://): only the artifacts
// under test cross the proxy, and no run needs the internet.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { curl } from '../fixtures/proxy/curl.ts';
import { type FakeMaven, installMaven, MAVEN_GROUP } from '../fixtures/proxy/maven.ts';
import { run } from '../fixtures/proxy/run.ts';
import { startWorld, type World } from '../fixtures/proxy/world.ts';
import { tempDir } from '../helpers/server.ts';
import { missing, toolSkip } from '../helpers/tools.ts';

const DEBIAN_REPO = '/usr/share/maven-repo';
const PLUGIN_DIR = `${DEBIAN_REPO}/org/apache/maven/plugins/maven-dependency-plugin`;

/** The maven-dependency-plugin version Debian installed (libmaven-dependency-plugin-java). */
function pluginVersion(): string | null {
  if (!existsSync(PLUGIN_DIR)) return null;
  const versions = readdirSync(PLUGIN_DIR).filter((v) => /^\d+(\.\d+)*$/.test(v));
  versions.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return versions.at(-1) ?? null;
}

const skip =
  toolSkip('mvn', ['-v']) ||
  toolSkip('dash', ['-c', ':']) ||
  (pluginVersion() === null
    ? missing('Debian package libmaven-dependency-plugin-java is not installed')
    : false);

describe('proxy: Maven Central mount', { skip, timeout: 300_000 }, () => {
  let w: World;
  let fake: FakeMaven;
  let dir: string;
  before(async () => {
    w = await startWorld({ git: false, overrides: { proxy: { ecosystems: ['maven'] } } });
    dir = tempDir('devutil-maven-');
    fake = installMaven(w.net, dir);
    // The user's ~/.m2/settings.xml: Debian's repository for the plugin, a strict checksum policy for
    // Central (a checksum that does not match fails the build), no mirror yet.
    mkdirSync(join(dir, '.m2'));
    writeFileSync(
      join(dir, '.m2/settings.xml'),
      `<?xml version="1.0" encoding="UTF-8"?>
<settings>
  <localRepository>${join(dir, 'local')}</localRepository>
  <profiles>
    <profile>
      <id>offline-plugins</id>
      <repositories>
        <repository><id>central</id><url>https://repo.maven.apache.org/maven2</url>
          <releases><checksumPolicy>fail</checksumPolicy></releases><snapshots><enabled>false</enabled></snapshots></repository>
        <repository><id>debian</id><url>file://${DEBIAN_REPO}</url>
          <releases><checksumPolicy>ignore</checksumPolicy></releases><snapshots><enabled>false</enabled></snapshots></repository>
      </repositories>
      <pluginRepositories>
        <pluginRepository><id>debian</id><url>file://${DEBIAN_REPO}</url>
          <releases><checksumPolicy>ignore</checksumPolicy></releases><snapshots><enabled>false</enabled></snapshots></pluginRepository>
      </pluginRepositories>
    </profile>
  </profiles>
  <activeProfiles><activeProfile>offline-plugins</activeProfile></activeProfiles>
</settings>
`,
    );
    // setup.sh adds the mirror, as a user would run it.
    const script = await (await fetch(`${w.proxy.url}/setup.sh`)).text();
    const setup = await run('dash', ['-s', '--', 'maven'], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir },
      exactEnv: true,
      input: script,
    });
    assert.equal(setup.code, 0, setup.stdout + setup.stderr);
    assert.match(
      readFileSync(join(dir, '.m2/settings.xml'), 'utf8'),
      new RegExp(`<url>${w.base}/maven/</url>`),
    );
  });
  after(() => w?.close());

  /** `mvn dependency:get` of hello (and, transitively, greeting) into the local repository. */
  function get(artifact = `${MAVEN_GROUP}:hello:1.0.0`) {
    return run(
      'mvn',
      [
        '-B',
        '--no-transfer-progress',
        // Java takes user.home from the password database, not HOME: name the file setup.sh wrote.
        '-s',
        join(dir, '.m2/settings.xml'),
        `org.apache.maven.plugins:maven-dependency-plugin:${pluginVersion()}:get`,
        `-Dartifact=${artifact}`,
      ],
      {
        cwd: dir,
        // A short-lived JVM: the C1 compiler alone starts sooner and is plenty for one download.
        env: { HOME: dir, MAVEN_OPTS: '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC', MAVEN_ARGS: '' },
        timeoutMs: 240_000,
      },
    );
  }

  const local = (p: string) => join(dir, 'local', p);
  const upstream = (suffix: string) =>
    w.net.seen.filter(
      (s) => s.host === 'repo.maven.apache.org' && s.method === 'GET' && s.url.endsWith(suffix),
    ).length;

  it('fetches an artifact and its dependency through devutil, checksums checked', async () => {
    const r = await get();
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`.slice(-4000));
    for (const a of fake.artifacts) {
      assert.ok(readFileSync(local(a.path)).equals(a.jar), a.path);
      // Maven asked devutil (the mirror), devutil asked Central: once for the jar and once for its .sha1.
      assert.equal(upstream(`/maven2${a.path}`), 1, a.path);
      assert.equal(upstream(`/maven2${a.path}.sha1`), 1, `${a.path}.sha1`);
    }
  });

  it('serves a second fetch into an empty local repository from its cache', async () => {
    rmSync(local(MAVEN_GROUP.replaceAll('.', '/')), { recursive: true, force: true });
    const r = await get();
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`.slice(-4000));
    for (const a of fake.artifacts) {
      assert.ok(readFileSync(local(a.path)).equals(a.jar), a.path);
      assert.equal(upstream(`/maven2${a.path}`), 1, `${a.path} went upstream again`);
      assert.equal(upstream(`/maven2${a.path.replace(/\.jar$/, '.pom')}`), 1);
    }
  });

  it('answers in plain text, read-only, and refuses paths outside the layout before any upstream request', async () => {
    const before = w.net.seen.length;
    const miss = await curl([`${w.base}/maven/com/example/devutil/nope/1.0/nope-1.0.jar`]);
    assert.equal(miss.status, 404);
    assert.match(miss.headers['content-type'] ?? '', /^text\/plain/);
    const put = await curl([
      '-X',
      'PUT',
      '--data',
      'x',
      `${w.base}/maven/com/example/devutil/hello/1.0.0/hello-1.0.0.jar`,
    ]);
    assert.equal(put.status, 405);
    const bad = await curl(['--path-as-is', `${w.base}/maven/com/example/../../../etc/passwd`]);
    assert.equal(bad.status, 400);
    assert.match(bad.body.toString(), /^invalid path segment: \.\.\n$/);
    const listing = await curl([`${w.base}/maven/com/example/devutil/`]);
    assert.equal(listing.status, 404);
    // Only the missing jar was asked for upstream.
    assert.deepEqual(
      w.net.seen.slice(before).map((s) => s.url),
      ['/maven2/com/example/devutil/nope/1.0/nope-1.0.jar'],
    );
  });
});
