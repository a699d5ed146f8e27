// Diagram engines that are system programs (the blockdiag family from Debian's python3-blockdiag,
// seqdiag, actdiag, nwdiag), found on PATH at start like Graphviz is for PlantUML. The source goes
// in through a temporary file (the programs read no stdin), the SVG comes back on stdout; the
// process group is killed at the render timeout.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Availability } from '../kroki/renderer.ts';
import { lineOf } from './diagram-error.ts';
import { type ThreadReply, ThreadTimeout } from './thread-pool.ts';

const MAX_OUTPUT = 32 * 1024 * 1024;

export function commandAvailability(program: string): Availability {
  const r = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status !== 0) {
    const pkg = `python3-${program === 'packetdiag' || program === 'rackdiag' ? 'nwdiag' : program}`;
    return { available: false, reason: `${program} is not installed (Debian: apt-get install ${pkg})` };
  }
  const v = /(\d+\.\d+(?:\.\d+)?)/.exec(`${r.stdout}${r.stderr}`);
  return { available: true, version: v?.[1] ?? 'unknown' };
}

export function runCommand(
  program: string,
  source: string,
  format: string,
  timeoutMs: number,
  _limitSize: number,
): Promise<ThreadReply> {
  const dir = mkdtempSync(join(tmpdir(), 'devutil-diag-'));
  const input = join(dir, 'diagram.diag');
  writeFileSync(input, source);
  return new Promise<ThreadReply>((resolve, reject) => {
    const child = spawn(program, ['-T', format === 'png' ? 'png' : 'svg', '-o', '-', input], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
    });
    const out: Buffer[] = [];
    let size = 0;
    let err = '';
    let settled = false;
    const finish = (r: ThreadReply | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
    };
    const timer = setTimeout(() => {
      kill();
      finish(new ThreadTimeout(`no result within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_OUTPUT) {
        kill();
        finish({ ok: false, kind: 'failed', message: 'the output is too large' });
      } else out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 4096) err += b.toString('utf8');
    });
    child.on('error', (e) => finish({ ok: false, kind: 'failed', message: e.message }));
    child.on('close', (code) => {
      if (code === 0 && size > 0) return finish({ ok: true, body: Buffer.concat(out) });
      // The programs print "ERROR: <message>" for a source they cannot parse.
      const msg =
        err
          .replace(/^ERROR:\s*/m, '')
          .replaceAll(input, '<source>')
          .trim() || `exit ${code}`;
      const line = lineOf(msg);
      finish({
        ok: false,
        kind: 'syntax',
        message: msg.slice(0, 1000),
        ...(line !== undefined ? { line } : {}),
      });
    });
  });
}
