// setup.sh's maven and gradle tools: a mirror of central put first in ~/.m2/settings.xml (created
// when missing; an earlier devutil mirror only gets the new URL; comments and every other line
// kept byte for byte), Gradle's settings.gradle lines printed, --undo putting the file back. Real
// Maven using the written file: test/e2e/proxy-maven.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Internet, startInternet } from '../../../test/fixtures/proxy/internet.ts';
import { installProbes } from '../../../test/fixtures/proxy/probes.ts';
import { run } from '../../../test/fixtures/proxy/run.ts';
import { type Running, startTestServer, tempDir } from '../../../test/helpers/server.ts';
import { hasTool, missing } from '../../../test/helpers/tools.ts';

const skip = hasTool('dash', ['-c', ':']) ? false : missing('dash is not installed');

// The shape of the stock settings.xml: commented-out examples (one of them a <mirrors> block), then
// the user's own mirror of everything.
const STOCK = `<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <!-- localRepository
   | <localRepository>/path/to/local/repo</localRepository>
  -->
  <!-- an old block, kept for reference:
  <mirrors>
    <mirror><id>old</id><mirrorOf>central</mirrorOf><url>https://old.example/</url></mirror>
  </mirrors>
  -->
  <mirrors>
    <!-- mirror
     | <mirror><id>example</id></mirror>
    -->
    <mirror>
      <id>corp</id>
      <mirrorOf>*</mirrorOf>
      <url>https://nexus.corp.example/repository/all/</url>
    </mirror>
  </mirrors>
</settings>
`;

describe('setup.sh maven and gradle', { skip, timeout: 120_000 }, () => {
  let srv: Running;
  let net: Internet | undefined;
  let script = '';
  let url = '';
  before(async () => {
    // The script fetches one real file of Maven Central through devutil before it changes anything.
    net = await startInternet(tempDir('devutil-maven-net-'));
    installProbes(net);
    srv = await startTestServer({
      overrides: { proxy: { ecosystems: ['maven'] } },
      env: { DEVUTIL_PROXY_RESOLVE: net.resolve.join(','), DEVUTIL_PROXY_UPSTREAM_CA: net.caFile },
    });
    script = await (await fetch(`${srv.url}/setup.sh`)).text();
    url = `${srv.url}/proxy/maven/`;
  });
  after(async () => {
    await srv?.close();
    await net?.close();
  });

  const setup = (home: string, args: string[]) =>
    run('dash', ['-s', '--', ...args], {
      env: { PATH: process.env['PATH'] ?? '', HOME: home },
      exactEnv: true,
      input: script,
    });
  const settings = (home: string) => readFileSync(join(home, '.m2/settings.xml'), 'utf8');
  const mirror = (indent: string, u: string) =>
    `${indent}<mirror>\n${indent}  <id>devutil</id>\n${indent}  <mirrorOf>central</mirrorOf>\n${indent}  <url>${u}</url>\n${indent}</mirror>\n`;

  it('is served with the mount URL for both tools', () => {
    assert.match(script, new RegExp(`^MAVEN_URL='${url}'$`, 'm'));
    assert.match(script, /^DEVUTIL_TOOLS='[^']*\bmaven gradle\b[^']*'$/m);
  });

  it('creates ~/.m2/settings.xml with the mirror, prints the Gradle lines, and undoes it', async () => {
    const home = tempDir('devutil-setup-mvn-');
    const r = await setup(home, ['maven', 'gradle']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // Checked first with a release POM of Maven Central, fetched through devutil.
    assert.ok(
      net?.seen.some((x) => x.host === 'repo.maven.apache.org' && x.url.endsWith('/junit-4.13.2.pom')),
    );
    assert.equal(
      settings(home),
      `<?xml version="1.0" encoding="UTF-8"?>\n<settings>\n  <mirrors>\n${mirror('    ', url)}  </mirrors>\n</settings>\n`,
    );
    assert.match(r.stdout, /maven: created .*\.m2\/settings\.xml/);
    assert.ok(r.stdout.includes(`      maven { url = uri("${url}") }`), r.stdout);
    assert.match(r.stdout, /plain http: add allowInsecureProtocol = true/);
    const again = await setup(home, ['maven']);
    assert.match(again.stdout, /maven: .*settings\.xml is already set/);
    const undo = await setup(home, ['--undo']);
    assert.equal(undo.code, 0, undo.stderr);
    assert.deepEqual(
      readdirSync(home).filter((f) => f !== '.config'),
      [],
    );
  });

  it('puts the mirror first in an existing <mirrors>, leaving comments and the rest as they were', async () => {
    const home = tempDir('devutil-setup-mvn-');
    mkdirSync(join(home, '.m2'));
    writeFileSync(join(home, '.m2/settings.xml'), STOCK);
    const r = await setup(home, ['maven']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(
      settings(home),
      STOCK.replace('  <mirrors>\n    <!-- mirror', `  <mirrors>\n${mirror('    ', url)}    <!-- mirror`),
    );
    // A later run for another instance changes only the URL of the devutil mirror.
    const moved = settings(home).replace(url, 'https://old-devutil.example/proxy/maven/');
    writeFileSync(join(home, '.m2/settings.xml'), moved);
    assert.equal((await setup(home, ['maven'])).code, 0);
    assert.equal(settings(home), moved.replace('https://old-devutil.example/proxy/maven/', url));
    await setup(home, ['--undo']);
    await setup(home, ['--undo']);
    assert.equal(settings(home), STOCK);
  });

  it('adds <mirrors> to a settings file without one, and refuses a file that is not Maven settings', async () => {
    const home = tempDir('devutil-setup-mvn-');
    mkdirSync(join(home, '.m2'));
    writeFileSync(join(home, '.m2/settings.xml'), '<settings>\n  <offline>false</offline>\n</settings>\n');
    assert.equal((await setup(home, ['maven'])).code, 0);
    assert.equal(
      settings(home),
      `<settings>\n  <offline>false</offline>\n  <mirrors>\n${mirror('    ', url)}  </mirrors>\n</settings>\n`,
    );
    writeFileSync(join(home, '.m2/settings.xml'), '{"not": "xml"}\n');
    const r = await setup(home, ['maven']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /has no <settings> element; it was not changed/);
    assert.equal(settings(home), '{"not": "xml"}\n');
  });
});
