// Memory per connection under HTTP/1.1 pipelining (issue 23, acceptance 3): one connection writes
// BENCH_PIPELINED (1000) requests for an 8 MiB file and never reads. Prints how much the server's
// resident memory and open descriptors grow while it holds them, and what is left 5 s after the
// client goes, for devutil, nginx serving the same file (the anchor: it answers pipelined requests
// one at a time) and a bare node:http server piping a read stream per request (the runtime's
// default, what devutil would do without its pipelining gate).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { freePort } from '../test/helpers/ports.ts';
import { header, type Proc, report, startDevutil, startNginx, tempFile } from './lib.ts';

const N = Number(process.env['BENCH_PIPELINED'] ?? 1000);
const SIZE = 8 * 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * RSS (MiB) and open descriptors of a process, with its children when `tree` (nginx: master and
 * worker; not devutil, whose PlantUML JVM starts and grows on its own meanwhile).
 */
function usage(pid: number, tree: boolean): { rss: number; fds: number } {
  let rss = 0;
  let fds = 0;
  const visit = (p: number) => {
    try {
      rss += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) / 1024;
      fds += readdirSync(`/proc/${p}/fd`).length;
      if (!tree) return;
      for (const t of readdirSync(`/proc/${p}/task`))
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean))
          visit(Number(c));
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return { rss, fds };
}

interface Figures {
  rssGrowth: number;
  fdGrowth: number;
  rssLeft: number;
  fdsLeft: number;
}

async function measure(p: Proc, path: string, tree = false): Promise<Figures> {
  await (await fetch(p.url + path)).arrayBuffer();
  await sleep(500);
  const base = usage(p.pid, tree);
  const s = connect(p.port, '127.0.0.1');
  s.on('error', () => {});
  await new Promise((r) => s.once('connect', r));
  s.pause();
  s.write(`GET ${path} HTTP/1.1\r\nHost: bench\r\n\r\n`.repeat(N));
  let peak = base;
  let last = base.rss;
  for (let t = 0; t < 60; t++) {
    await sleep(1000);
    const now = usage(p.pid, tree);
    peak = { rss: Math.max(peak.rss, now.rss), fds: Math.max(peak.fds, now.fds) };
    if (t >= 4 && Math.abs(now.rss - last) < 2) break;
    last = now.rss;
  }
  s.destroy();
  await sleep(5000);
  const after = usage(p.pid, tree);
  return {
    rssGrowth: peak.rss - base.rss,
    fdGrowth: peak.fds - base.fds,
    rssLeft: after.rss - base.rss,
    fdsLeft: after.fds - base.fds,
  };
}

async function bareNode(file: string): Promise<Proc> {
  const port = await freePort();
  const code = `const fs = require('node:fs');
require('node:http').createServer((q, s) => {
  s.setHeader('content-length', ${SIZE});
  fs.createReadStream(${JSON.stringify(file)}).pipe(s);
}).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`).then((r) => r.arrayBuffer());
      break;
    } catch {
      await sleep(100);
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid ?? 0,
    close: async () => {
      child.kill('SIGKILL');
    },
  };
}

const rows = (d: Figures, a: Figures) => [
  {
    metric: `RSS growth, ${N} pipelined`,
    devutil: d.rssGrowth,
    anchor: a.rssGrowth,
    unit: 'MiB',
    higherIsBetter: false,
  },
  { metric: 'open fds growth', devutil: d.fdGrowth, anchor: a.fdGrowth, unit: 'fds', higherIsBetter: false },
  {
    metric: 'RSS left 5 s after close',
    devutil: d.rssLeft,
    anchor: a.rssLeft,
    unit: 'MiB',
    higherIsBetter: false,
  },
  {
    metric: 'fds left 5 s after close',
    devutil: d.fdsLeft,
    anchor: a.fdsLeft,
    unit: 'fds',
    higherIsBetter: false,
  },
];

header(`pipelining: one connection, ${N} pipelined GETs of an 8 MiB file, never read`);
const bytes = randomBytes(SIZE);
const file = tempFile('big.bin', bytes);
// nginx's worker runs as another user: the file must be readable by it.
chmodSync(dirname(file), 0o755);
chmodSync(file, 0o644);

const dev = await startDevutil({ DEVUTIL_FILES_RATE_LIMIT: 'off', DEVUTIL_DIAGRAMS_PRESTART: 'false' });
let d: Figures;
try {
  const form = new FormData();
  form.append('file', new Blob([bytes]), 'big.bin');
  const up = await fetch(`${dev.url}/api/file/big.bin`, { method: 'POST', body: form });
  if (up.status !== 200) throw new Error(`upload answered ${up.status}`);
  d = await measure(dev, '/api/file/big.bin');
} finally {
  await dev.close();
}

const nginx = await startNginx(`location / { root ${dirname(file)}; }`, '', '/big.bin');
let n: Figures;
try {
  n = await measure(nginx, '/big.bin', true);
} finally {
  await nginx.close();
}
report('pipelined downloads held', 'nginx', rows(d, n));

const bare = await bareNode(file);
let b: Figures;
try {
  b = await measure(bare, '/');
} finally {
  await bare.close();
}
report('pipelined downloads held', 'bare node', rows(d, b));
