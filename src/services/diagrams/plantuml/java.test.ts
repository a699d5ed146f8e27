// Java detection is remembered in the data directory until the launcher or the JDK changes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';
import { buildWorker, detectJavaCached } from './java.ts';

describe('Java detection cache', { skip: toolSkip('java', ['-version']), timeout: 60_000 }, () => {
  it('runs java once, and again when the launcher changes', async () => {
    const dir = tempDir();
    const runs = join(dir, 'runs');
    writeFileSync(runs, '');
    // A launcher that counts its runs and hands over to the real one (java.home stays the JDK's).
    const java = join(dir, 'java');
    writeFileSync(java, `#!/bin/sh\necho run >> '${runs}'\nexec java "$@"\n`);
    chmodSync(java, 0o755);
    const count = () => readFileSync(runs, 'utf8').split('\n').filter(Boolean).length;

    const first = await detectJavaCached(java, dir);
    assert.equal(first.ok, true);
    assert.ok((first.major ?? 0) >= 17);
    assert.equal(count(), 1);
    assert.deepEqual(await detectJavaCached(java, dir), first);
    assert.equal(count(), 1, 'the second start asks the cache, not java');

    const later = new Date(Date.now() + 60_000);
    utimesSync(java, later, later); // an update replaced the launcher
    assert.deepEqual(await detectJavaCached(java, dir), first);
    assert.equal(count(), 2);
  });

  it('asks whether the JVM takes the native trim flag, and starts without it where it is refused', async () => {
    const dir = tempDir();
    const takes = spawnSync('java', ['-XX:TrimNativeHeapInterval=1000', '-version']).status === 0;
    assert.equal((await detectJavaCached('java', dir)).nativeTrim, takes);
    // A launcher that refuses the flag as an older JVM does, and hands everything else over.
    const java = join(dir, 'old-java');
    writeFileSync(
      java,
      `#!/bin/sh\ncase "$*" in *TrimNativeHeapInterval*) echo "Unrecognized VM option 'TrimNativeHeapInterval=10000'" >&2; exit 1;; esac\nexec java "$@"\n`,
    );
    chmodSync(java, 0o755);
    const info = await detectJavaCached(java, tempDir());
    assert.equal(info.ok, true, info.reason);
    assert.equal(info.nativeTrim, false);
    assert.ok((info.major ?? 0) >= 17);
  });

  it('never remembers a missing Java', async () => {
    const dir = tempDir();
    const info = await detectJavaCached(join(dir, 'no-java'), dir);
    assert.equal(info.ok, false);
    assert.match(info.reason ?? '', /Java 17\+/);
    assert.equal(existsSync(join(dir, 'plantuml', 'java.json')), false);
  });
});

describe('Worker build', { timeout: 60_000 }, () => {
  it('kills a compiler still running when the build is aborted (shutdown), leaving no directory', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'javac.pid');
    // A compiler that never finishes, as javac on a machine too busy to finish before the deadline.
    const javac = join(dir, 'javac');
    writeFileSync(javac, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 600\n`);
    chmodSync(javac, 0o755);
    const stop = new AbortController();
    const build = buildWorker({ ok: true, javac, version: '17' }, join(dir, 'none.jar'), dir, stop.signal);
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the compiler');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    stop.abort();
    await assert.rejects(build, /building the PlantUML worker failed/);
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the compiler was killed');
    assert.deepEqual(readdirSync(join(dir, 'plantuml')), [], 'no worker or half-built directory is left');
  });
});
