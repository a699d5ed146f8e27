// A real writer process killed with SIGKILL mid-write (crash tests of the blob store and the cache):
// runs `code` as an ES module, waits for its temporary file to pass `minBytes`, then kills it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TS_EXEC_ARGV } from '../../scripts/ts-loader.js';

export async function killMidWrite(code: string, tmpDir: string, minBytes: number): Promise<void> {
  const child = spawn(process.execPath, [...TS_EXEC_ARGV, '--input-type=module', '-e', code], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  try {
    let partial = '';
    for (let i = 0; i < 400 && !partial; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const names = existsSync(tmpDir) ? readdirSync(tmpDir) : [];
      partial = names.find((n) => statSync(join(tmpDir, n)).size >= minBytes) ?? '';
    }
    assert.ok(partial.startsWith(`${child.pid}-`), 'the writer had a partial temporary file');
    child.kill('SIGKILL');
    await exited;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
