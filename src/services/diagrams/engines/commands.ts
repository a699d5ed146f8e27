// Diagram engines that are system programs (the blockdiag family from Debian's python3-blockdiag,
// seqdiag, actdiag, nwdiag; Debian names them blockdiag3...), found on PATH at start like Graphviz
// is for PlantUML. The source goes in and the SVG comes out through a private temporary directory
// (the programs use neither stdin nor stdout). Each runs under the kernel's bounds (bounds.ts:
// committed memory, CPU seconds, output file size, no core file, killed with the server, below the
// server's CPU priority), and its process group is killed at the render timeout. blockdiag's `background` and `icon` attributes make it open a URL or a local file: refused.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundedArgv, cpuMillis } from '../../../infra/process/bounds.ts';
import type { Availability } from '../kroki/renderer.ts';
import { lineOf } from './diagram-error.ts';
import { RenderCrashed, type RenderReply, RenderTimeout } from './render-job.ts';

/** What a program that ran out of memory prints (Python's MemoryError, a failed malloc). */
const OOM = /MemoryError|Cannot allocate memory|out of memory/i;

export interface CommandLimits {
  timeoutMs: number;
  /** Committed memory the program may have (RLIMIT_DATA). */
  memoryBytes: number;
  /** Largest SVG it may write (RLIMIT_FSIZE). */
  maxOutputBytes: number;
  /** Nice value (render-job.ts: RENDER_NICE, or QUARANTINE_NICE in the quarantine lane). */
  nice: number;
}
/** Attributes that make blockdiag read a URL or a file. */
const FETCHING = /\b(background|icon)\s*=/i;
/** The program found for each name (Debian installs blockdiag as blockdiag3). */
const found = new Map<string, string>();

/** Whether `program` runs here and its version; asked without blocking (a Python start takes seconds). */
export async function commandAvailability(program: string): Promise<Availability> {
  for (const exe of [program, `${program}3`]) {
    const r = await new Promise<{ ok: boolean; out: string }>((resolve) =>
      execFile(exe, ['--version'], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ ok: !err, out: `${stdout}${stderr}` }),
      ),
    );
    if (!r.ok) continue;
    found.set(program, exe);
    const v = /(\d+\.\d+(?:\.\d+)?)/.exec(r.out);
    return { available: true, version: v?.[1] ?? 'unknown' };
  }
  const pkg = `python3-${program === 'packetdiag' || program === 'rackdiag' ? 'nwdiag' : program}`;
  return { available: false, reason: `${program} is not installed (Debian: apt-get install ${pkg})` };
}

export function runCommand(program: string, source: string, limits: CommandLimits): Promise<RenderReply> {
  const { timeoutMs } = limits;
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
  const argv = boundedArgv([found.get(program) ?? program, '-T', 'svg', '--nodoctype', '-o', output, input], {
    dataBytes: limits.memoryBytes,
    cpuSeconds: timeoutMs / 1000 + 1,
    fileBytes: limits.maxOutputBytes,
    nice: limits.nice,
    dieWithParent: true,
  });
  return new Promise<RenderReply>((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
    });
    let err = '';
    let settled = false;
    const finish = (r: RenderReply | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const timer = setTimeout(() => {
      const cpuMs = child.pid ? cpuMillis(child.pid) : undefined;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
      finish(new RenderTimeout(`no result within ${timeoutMs} ms`, cpuMs));
    }, timeoutMs);
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 4096) err += b.toString('utf8');
    });
    child.on('error', (e) => finish({ ok: false, kind: 'failed', message: e.message }));
    child.on('close', (code, signal) => {
      // Killed by a bound: CPU seconds (SIGXCPU, then SIGKILL), the output's size (SIGXFSZ), or
      // an allocation that failed and aborted it.
      if (signal === 'SIGXCPU' || (signal === 'SIGKILL' && !settled))
        return finish(
          new RenderTimeout(`the program used more than ${Math.ceil(timeoutMs / 1000)} s of CPU`),
        );
      if (signal === 'SIGXFSZ')
        return finish({
          ok: false,
          kind: 'too-large',
          message: `the diagram is larger than ${limits.maxOutputBytes} bytes`,
        });
      const oom = OOM.test(err);
      if (signal || oom)
        return finish(
          new RenderCrashed(
            oom
              ? 'the diagram needs more memory than a render may use'
              : `the ${program} program crashed on this diagram (${signal})`,
            oom,
          ),
        );
      if (code === 0) {
        try {
          const svg = readFileSync(output);
          if (svg.length > 0) return finish({ ok: true, body: svg });
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
