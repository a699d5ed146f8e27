// Loading the packaged ASN database (asn-ipv4.csv and asn-ipv6.csv) into RangeTable, as the first
// ?details=1 request does: CPU time and peak RSS of a fresh process per run (median of BENCH_RUNS,
// default 5). BENCH_RANGES_MODULES (comma-separated paths) compares other builds of ranges.ts,
// alternating them run by run so load drift on a shared machine hits each alike.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { header, median } from './lib.ts';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 5);
const here = dirname(new URL(import.meta.url).pathname);
const modules = (process.env['BENCH_RANGES_MODULES'] ?? join(here, '../src/services/ip/ranges.ts'))
  .split(',')
  .map((p) => resolve(p));
const dir = dirname(createRequire(import.meta.url).resolve('@ip-location-db/asn/package.json'));
const files = ['asn-ipv4.csv', 'asn-ipv6.csv'].map((f) => join(dir, f));

// The child: load both files once, print CPU ms, peak RSS MiB and the rows (so builds can be checked alike).
const child = `
const { RangeTable } = await import(process.argv[1]);
const c0 = process.cpuUsage();
let rows = 0;
for (const f of process.argv.slice(2)) rows += (await RangeTable.load(f)).rows;
const c = process.cpuUsage(c0);
console.log(JSON.stringify({ cpu: (c.user + c.system) / 1000, rss: process.resourceUsage().maxRSS / 1024, rows }));
`;

header('RangeTable.load of the packaged ASN CSVs (IPv4 + IPv6)');
const seen = new Map<string, { cpu: number[]; rss: number[]; rows: number }>();
for (let r = 0; r < RUNS; r++) {
  for (const m of modules) {
    const out = spawnSync(
      process.execPath,
      [...process.execArgv, '--input-type=module', '-e', child, m, ...files],
      {
        encoding: 'utf8',
      },
    );
    if (out.status !== 0) throw new Error(`${m}: ${out.stderr}`);
    const { cpu, rss, rows } = JSON.parse(out.stdout) as { cpu: number; rss: number; rows: number };
    const s = seen.get(m) ?? { cpu: [], rss: [], rows };
    s.cpu.push(cpu);
    s.rss.push(rss);
    seen.set(m, s);
  }
}
for (const [m, s] of seen)
  console.log(
    `${m}: ${s.rows} rows, CPU ${median(s.cpu).toFixed(0)} ms, peak RSS ${median(s.rss).toFixed(0)} MiB ` +
      `(median of ${RUNS}; CPU runs ${s.cpu.map((x) => x.toFixed(0)).join(' ')})`,
  );
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
