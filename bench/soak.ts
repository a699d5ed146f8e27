// Bounded soak: mixed traffic over the utilities against one devutil process, sampling req/s, p99
// and RSS over time. RSS must plateau: the report prints the curve and the growth over the last
// half of the run. BENCH_SECONDS (default 300) sets the length.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireCommand, rssOf, startDevutil, tempFile } from './lib.ts';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 300);
const sampleEvery = Math.max(1, Math.round(seconds / 30));

// One client drives all the load, so the per-client budgets are off (429s would make it a rate-limit soak).
const dev = await startDevutil({
  DEVUTIL_LOG_LEVEL: 'warn',
  DEVUTIL_IP_RATE_LIMIT: 'off',
  DEVUTIL_IMAGE_RATE_LIMIT: 'off',
  DEVUTIL_IMAGE_CLIENT_SHARE: '100',
  DEVUTIL_AVATAR_CLIENT_SHARE: '100',
  DEVUTIL_DIAGRAMS_CLIENT_SHARE: '100',
});
try {
  // Something to download: one stored text file.
  const form = new FormData();
  form.append('file', new Blob(['soak test line\n'.repeat(20_000)], { type: 'text/plain' }), 'soak.txt');
  const up = await fetch(`${dev.url}/api/file/soak-file`, { method: 'POST', body: form });
  if (!up.ok) console.log(`upload for the soak failed: ${up.status} (file downloads will count as errors)`);

  const paths = [
    '/rest/api/v1/ip',
    '/api/ip',
    '/rest/api/v1/image?id=soak&width=320',
    '/rest/api/v1/image?id=soak2&width=200&height=200',
    '/avatar/00000000000000000000000000000000?d=identicon&s=80',
    '/avatar/11111111111111111111111111111111?d=retro&s=64',
    '/api/file/soak-file',
    '/plantuml/svg/SyfFKj2rKt3CoKnELR1Io4ZDoSa70000',
    '/healthz',
    '/nope',
  ];
  const script = tempFile(
    'soak.lua',
    `local paths = {${paths.map((p) => `"${p}"`).join(',')}}
request = function()
  return wrk.format("GET", paths[math.random(#paths)], {["Accept-Encoding"] = "gzip"})
end
`,
  );
  requireCommand('wrk');
  const wrkOut: string[] = [];
  const w = spawn('wrk', ['-t', '1', '-c', '32', '-d', `${seconds}s`, '--latency', '-s', script, dev.url]);
  w.stdout.on('data', (c) => wrkOut.push(String(c)));
  const samples: { t: number; rssMB: number; reqs: number }[] = [];
  const started = Date.now();
  let lastCount = 0;
  const counter = async () => {
    const m = await fetch(`${dev.url}/metrics`).then((r) => r.text());
    let total = 0;
    for (const line of m.split('\n')) {
      if (line.startsWith('devutil_http_requests_total{'))
        total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return total;
  };
  const timer = setInterval(async () => {
    const reqs = await counter().catch(() => lastCount);
    samples.push({
      t: Math.round((Date.now() - started) / 1000),
      rssMB: rssOf(dev.pid) / 1e6,
      reqs: reqs - lastCount,
    });
    lastCount = reqs;
  }, sampleEvery * 1000);
  await new Promise((r) => w.once('exit', r));
  clearInterval(timer);

  const out = wrkOut.join('');
  console.log(`\n== soak: ${seconds}s of mixed traffic (${paths.length} routes, 32 connections) ==`);
  console.log(
    out
      .split('\n')
      .filter((l) => /Requests\/sec|99%|50%|Non-2xx|Socket errors/.test(l))
      .join('\n'),
  );
  console.log('\n   t(s)   RSS(MB)   req/s');
  for (const s of samples)
    console.log(
      `${String(s.t).padStart(7)} ${s.rssMB.toFixed(1).padStart(9)} ${(s.reqs / sampleEvery).toFixed(0).padStart(7)}`,
    );
  const half = samples.slice(Math.floor(samples.length / 2));
  if (half.length >= 2) {
    const first = half[0]!.rssMB;
    const max = Math.max(...half.map((s) => s.rssMB));
    const growth = ((max - first) / first) * 100;
    console.log(
      `\nRSS over the second half: ${first.toFixed(1)} -> max ${max.toFixed(1)} MB (${growth.toFixed(1)}%): ${growth < 10 ? 'PLATEAU' : 'GROWING'}`,
    );
  }
  writeFileSync(
    join(process.cwd(), 'test-output', 'soak.json'),
    JSON.stringify({ seconds, samples }, null, 2),
  );
} finally {
  await dev.close();
}
