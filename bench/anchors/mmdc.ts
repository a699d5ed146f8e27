// The Mermaid anchor of bench/diagrams.ts: mmdc (@mermaid-js/mermaid-cli from npm) with the system
// Chromium, one mmdc process per diagram, as a user runs it. Installed once, with its puppeteer peer
// and without puppeteer's browser download, under ~/.cache/devutil/bench-mmdc (not a dependency of
// the project). Also the runner that measures both sides alike: diagrams/s and peak PSS.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { tempFile, treeSum } from '../lib.ts';

const DIR = join(homedir(), '.cache', 'devutil', 'bench-mmdc');
const MMDC = join(DIR, 'node_modules', '.bin', 'mmdc');

/** mmdc's path, installing it first when it is not there. */
export function mmdc(): string {
  if (existsSync(MMDC)) return MMDC;
  mkdirSync(DIR, { recursive: true });
  if (!existsSync(join(DIR, 'package.json'))) writeFileSync(join(DIR, 'package.json'), '{"private":true}\n');
  console.log(`# installing @mermaid-js/mermaid-cli in ${DIR} (once)`);
  const r = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '@mermaid-js/mermaid-cli@12', 'puppeteer@25'],
    { cwd: DIR, stdio: 'inherit', env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' } },
  );
  if (r.status !== 0 || !existsSync(MMDC)) throw new Error('installing @mermaid-js/mermaid-cli failed');
  return MMDC;
}

export interface Run {
  /** Diagrams per second over the whole run. */
  rps: number;
  /** Highest PSS of the measured process tree(s) seen while it ran (bytes). */
  peakPss: number;
  failures: number;
}

/** Runs `jobs` with `concurrency` at a time while sampling `pss()` every 100 ms. */
export async function measure(
  jobs: (() => Promise<boolean>)[],
  concurrency: number,
  pss: () => number,
): Promise<Run> {
  let peakPss = pss();
  const timer = setInterval(() => {
    peakPss = Math.max(peakPss, pss());
  }, 100);
  let next = 0;
  let failures = 0;
  const t = performance.now();
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < jobs.length) if (!(await jobs[next++]!())) failures++;
      }),
    );
  } finally {
    clearInterval(timer);
  }
  const sec = (performance.now() - t) / 1000;
  return { rps: jobs.length / sec, peakPss: Math.max(peakPss, pss()), failures };
}

/** The mmdc jobs for `sources` (each its own process and Chromium) and the PSS of all of them. */
export function mmdcJobs(
  sources: string[],
  chromium: string,
): { jobs: (() => Promise<boolean>)[]; pss: () => number } {
  const bin = mmdc();
  const config = tempFile(
    'puppeteer.json',
    JSON.stringify({
      executablePath: chromium,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
      ],
    }),
  );
  const live = new Set<number>();
  const jobs = sources.map((source, i) => async () => {
    const input = tempFile(`m${i}.mmd`, source);
    const output = `${input}.svg`;
    const child = spawn(bin, ['-q', '-p', config, '-i', input, '-o', output], { stdio: 'ignore' });
    if (child.pid) live.add(child.pid);
    const code = await new Promise<number | null>((r) => child.on('close', r));
    if (child.pid) live.delete(child.pid);
    return code === 0 && existsSync(output) && readFileSync(output, 'utf8').includes('<svg');
  });
  return { jobs, pss: () => [...live].reduce((n, pid) => n + treePss(pid), 0) };
}

/**
 * PSS of a process and all its descendants (bytes): a browser's processes share much of their
 * memory, which RSS would count once per process. A process gone meanwhile counts 0.
 */
export function treePss(pid: number): number {
  return treeSum(pid, (p) => {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  });
}
