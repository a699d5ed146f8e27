// Without Java the diagram routes answer 503 with the reason, /readyz says so, the rest works.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestServer, tempDir } from '../../../../test/helpers/server.ts';
import { missing, toolSkip } from '../../../../test/helpers/tools.ts';

describe('PlantUML without Java', { timeout: 120_000 }, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { diagrams: { java: '/nonexistent/bin/java' } } });
  });
  after(async () => {
    await app?.close();
  });

  it('answers diagram routes with 503 saying Java 17+ is needed', async () => {
    for (const url of ['/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000', '/plantuml/language']) {
      const r = await app.inject({ url });
      assert.equal(r.statusCode, 503, url);
      assert.match(r.body, /Java 17\+/);
      assert.match(r.headers['content-type'] as string, /^text\/plain/);
      assert.equal(r.headers['retry-after'], '60');
      assert.doesNotMatch(r.body, /nonexistent/); // no server path reaches the client
    }
  });

  it('reports it in /readyz as degraded, keeping the instance ready for the other utilities', async () => {
    const r = await app.inject({ url: '/readyz' });
    assert.equal(r.statusCode, 200);
    assert.equal(r.json().status, 'degraded');
    const check = r.json().checks.plantuml;
    assert.equal(check.ok, false);
    assert.match(check.detail, /Java 17\+/);
  });

  it('keeps the routes that need no engine working', async () => {
    const coder = await app.inject({ url: '/plantuml/coder/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000' });
    assert.equal(coder.statusCode, 200);
    assert.match(coder.body, /Bob -> Alice : hello/);
    const health = await app.inject({ url: '/healthz' });
    assert.equal(health.statusCode, 200);
    const ip = await app.inject({ url: '/rest/api/v1/ip', remoteAddress: '198.51.100.1' });
    assert.equal(ip.statusCode, 200);
  });
});

/**
 * A JRE made from the installed JDK: its own java and libjvm (so java.home points here), the rest
 * of lib/ as symlinks, and no javac. Without java or with an unusual JDK layout, a reason to skip,
 * which under CI=true is a failure instead (test/helpers/tools.ts).
 */
function fakeJre(): { java: string } | { skip: string } {
  const noJava = toolSkip('java', ['-version']);
  if (noJava) return { skip: noJava };
  let home: string;
  try {
    home = dirname(dirname(realpathSync('/usr/bin/java')));
  } catch {
    return { skip: missing('no /usr/bin/java to derive a JRE from') };
  }
  const jvm = join(home, 'lib', 'server', 'libjvm.so');
  if (!existsSync(join(home, 'bin', 'javac')) || !existsSync(jvm))
    return { skip: missing(`no JDK (bin/javac, lib/server/libjvm.so) under ${home} to derive a JRE from`) };
  const jre = join(tempDir(), 'jre');
  mkdirSync(join(jre, 'bin'), { recursive: true });
  copyFileSync(join(home, 'bin', 'java'), join(jre, 'bin', 'java'));
  // Symlinks for everything (lib/ is ~200 MB) except libjvm.so, whose real path sets java.home.
  mkdirSync(join(jre, 'lib', 'server'), { recursive: true });
  for (const name of readdirSync(join(home, 'lib'))) {
    if (name !== 'server') symlinkSync(join(home, 'lib', name), join(jre, 'lib', name));
  }
  for (const name of readdirSync(join(home, 'lib', 'server'))) {
    if (name !== 'libjvm.so')
      symlinkSync(join(home, 'lib', 'server', name), join(jre, 'lib', 'server', name));
  }
  copyFileSync(realpathSync(jvm), join(jre, 'lib', 'server', 'libjvm.so'));
  return { java: join(jre, 'bin', 'java') };
}

const jre = fakeJre();
describe('PlantUML on a JRE without javac', {
  skip: 'skip' in jre ? jre.skip : false,
  timeout: 120_000,
}, () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildTestServer({ overrides: { diagrams: { java: 'java' in jre ? jre.java : 'java' } } });
  });
  after(async () => {
    await app?.close();
  });

  it('answers 503 saying a JDK is needed, and /readyz says so', async () => {
    const r = await app.inject({ url: '/plantuml/png/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000' });
    assert.equal(r.statusCode, 503);
    assert.match(r.body, /Java 17\+ JDK/);
    const ready = await app.inject({ url: '/readyz' });
    assert.equal(ready.json().checks.plantuml.ok, false);
    assert.match(ready.json().checks.plantuml.detail, /JDK/);
  });
});
