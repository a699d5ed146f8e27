// The workers' class-data sharing archive with the real JVM: made once, mapped by later starts, and
// a damaged one never stops diagrams (the worker starts without it and a new one is made).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { buildTestServer, tempDir } from '../../../../test/helpers/server.ts';
import { toolSkip } from '../../../../test/helpers/tools.ts';
import { waitFor } from '../../../../test/helpers/wait.ts';

/** Command lines of this process's JVMs: serving workers, or training runs. */
function jvms(training = false): string[] {
  const r = spawnSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => l.includes('DevutilPlantumlWorker') && l.includes('-Ddevutil.train') === training);
}

function archives(dataDir: string): string[] {
  const root = join(dataDir, 'plantuml');
  return readdirSync(root)
    .filter((d) => d.startsWith('worker-'))
    .flatMap((d) => readdirSync(join(root, d)).map((f) => join(root, d, f)))
    .filter((f) => f.endsWith('.jsa'));
}

function mtime(f: string): number {
  try {
    return statSync(f).mtimeMs;
  } catch {
    return 0; // replaced meanwhile
  }
}

/**
 * Training runs at the pace of a loaded machine: waited for without a timing assertion, within the
 * file's bound so a stuck run says what it waited for; asked every 250 ms (a check may spawn ps).
 */
const waitTraining = (cond: () => boolean, what: string) => waitFor(cond, what, 400_000, 250);

/** A server on `dataDir` with one worker, which renders one new diagram (so its worker is up). */
async function renderOnce(dataDir: string, text: string) {
  const app = await buildTestServer({
    overrides: { server: { dataDir }, diagrams: { workers: 1, workerThreads: 1, cacheDisk: 0 } },
  });
  const r = await app.inject({
    method: 'POST',
    url: '/plantuml/svg',
    payload: `A -> B : ${text}`,
    headers: { 'content-type': 'text/plain' },
  });
  return { app, status: r.statusCode, body: r.body, args: jvms() };
}

describe('PlantUML class-data archive', { skip: toolSkip('java', ['-version']), timeout: 480_000 }, () => {
  const dataDir = tempDir();

  it('is made on the first start and mapped by the next start', async () => {
    const first = await renderOnce(dataDir, 'first');
    assert.equal(first.status, 200);
    assert.ok(
      first.args.every((a) => !a.includes('SharedArchiveFile')),
      'no archive exists before the first start',
    );
    await waitTraining(() => archives(dataDir).length === 1, 'the first server to make an archive');
    await first.app.close();
    const [archive] = archives(dataDir);

    const second = await renderOnce(dataDir, 'second');
    await second.app.close();
    assert.equal(second.status, 200);
    assert.match(second.body, /second/);
    assert.equal(second.args.length, 1);
    // -Xshare:on: this JVM came up only because it could map the archive.
    assert.ok(second.args[0]!.includes(`-XX:SharedArchiveFile=${archive}`), second.args[0]);
    assert.ok(second.args[0]!.includes('-Xshare:on'));
    assert.deepEqual(archives(dataDir), [archive], 'reused, not made again');
  });

  it('starts and renders with a damaged archive, and makes a new one', async () => {
    const [archive] = archives(dataDir);
    assert.ok(archive, 'the first test made an archive');
    // Bit rot in the middle: the size (in the name) still matches, the JVM's checksum does not.
    const bytes = readFileSync(archive);
    for (let i = 0; i < 64; i++) bytes[Math.floor(bytes.length / 2) + i * 4096]! ^= 0xff;
    writeFileSync(archive, bytes);
    const before = statSync(archive).mtimeMs;

    const run = await renderOnce(dataDir, 'damaged');
    assert.equal(run.status, 200);
    assert.match(run.body, /damaged/);
    assert.equal(run.args.length, 1);
    assert.ok(!run.args[0]!.includes('SharedArchiveFile'), 'the worker runs without the damaged archive');
    await waitTraining(() => archives(dataDir).some((f) => mtime(f) > before), 'a new archive');
    await run.app.close();

    const next = await renderOnce(dataDir, 'after');
    await next.app.close();
    assert.equal(next.status, 200);
    assert.ok(next.args[0]!.includes('-XX:SharedArchiveFile='), 'the new archive is mapped');
  });

  it('never maps an archive cut short (the JVM would crash on it)', async () => {
    const [archive] = archives(dataDir);
    assert.ok(archive);
    truncateSync(archive, 100_000);
    const run = await renderOnce(dataDir, 'truncated');
    await waitTraining(() => jvms(true).length === 1, 'a training run for a new archive');
    await run.app.close();
    assert.deepEqual(jvms(true), [], 'closing the server stops the training run');
    assert.equal(run.status, 200);
    assert.match(run.body, /truncated/);
    assert.ok(!run.args[0]!.includes('SharedArchiveFile'));
    assert.ok(!archives(dataDir).includes(archive), 'the cut file is removed');
    const crashes = readdirSync(dirname(archive)).filter((f) => f.startsWith('hs_err'));
    assert.deepEqual(crashes, [], 'no JVM crashed on it');
  });
});
