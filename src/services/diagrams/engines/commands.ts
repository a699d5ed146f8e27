// Diagram engines that are system programs (the blockdiag family from Debian's python3-blockdiag,
// seqdiag, actdiag, nwdiag; Debian names them blockdiag3...), found on PATH at start like Graphviz
// is for PlantUML. The source goes in and the SVG comes out through a private temporary directory
// (the programs use neither stdin nor stdout); the process group is killed at the render timeout.
// blockdiag's `background` and `icon` attributes make it open a URL or a local file: refused.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Availability } from '../kroki/renderer.ts';
import { lineOf } from './diagram-error.ts';
import { type ThreadReply, ThreadTimeout } from './thread-pool.ts';

const MAX_OUTPUT = 32 * 1024 * 1024;
/** Attributes that make blockdiag read a URL or a file. */
const FETCHING = /\b(background|icon)\s*=/i;
/** The program found for each name (Debian installs blockdiag as blockdiag3). */
const found = new Map<string, string>();

export function commandAvailability(program: string): Availability {
  for (const exe of [program, `${program}3`]) {
    const r = spawnSync(exe, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (r.error || r.status !== 0) continue;
    found.set(program, exe);
    const v = /(\d+\.\d+(?:\.\d+)?)/.exec(`${r.stdout}${r.stderr}`);
    return { available: true, version: v?.[1] ?? 'unknown' };
  }
  const pkg = `python3-${program === 'packetdiag' || program === 'rackdiag' ? 'nwdiag' : program}`;
  return { available: false, reason: `${program} is not installed (Debian: apt-get install ${pkg})` };
}

export function runCommand(program: string, source: string, timeoutMs: number): Promise<ThreadReply> {
  if (FETCHING.test(source))
    return Promise.resolve({
      ok: false,
      kind: 'syntax',
      message: 'the background and icon attributes are not allowed here (they read URLs and files)',
    });
  const dir = mkdtempSync(join(tmpdir(), 'devutil-diag-'));
  const input = join(dir, 'diagram.diag');
  const output = join(dir, 'diagram.svg');
  writeFileSync(input, source);
  return new Promise<ThreadReply>((resolve, reject) => {
    const child = spawn(found.get(program) ?? program, ['-T', 'svg', '--nodoctype', '-o', output, input], {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
    });
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
    const timer = setTimeout(() => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
      finish(new ThreadTimeout(`no result within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 4096) err += b.toString('utf8');
    });
    child.on('error', (e) => finish({ ok: false, kind: 'failed', message: e.message }));
    child.on('close', (code) => {
      if (code === 0) {
        try {
          const svg = readFileSync(output);
          if (svg.length > 0 && svg.length <= MAX_OUTPUT) return finish({ ok: true, body: svg });
        } catch {}
        return finish({ ok: false, kind: 'failed', message: 'the program wrote no SVG' });
      }
      // The programs print "ERROR: <line>,<col>-<line>,<col>: <message>" for a source they cannot parse.
      const msg =
        err
          .replace(/^ERROR:\s*/m, '')
          .replaceAll(dir, '')
          .trim() || `exit ${code}`;
      const pos = /^(\d+),\d+/.exec(msg);
      const line = pos ? Number(pos[1]) : lineOf(msg);
      finish({
        ok: false,
        kind: 'syntax',
        message: msg.slice(0, 1000),
        ...(line !== undefined ? { line } : {}),
      });
    });
  });
}
