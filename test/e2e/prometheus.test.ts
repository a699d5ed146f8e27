// The shipped Prometheus rules with the real tools (Debian's prometheus package): `promtool check
// rules` and `promtool test rules` on deploy/prometheus/, then a real Prometheus that loads those
// rules and scrapes two devutil nodes until both targets are up and devutil series from both
// instances are in its database.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  dashboardExprs,
  loadRules,
  RULES_FILE,
  RULES_TEST_FILE,
  withVariables,
} from '../helpers/metric-names.ts';
import { freePort } from '../helpers/ports.ts';
import { type DevutilProcess, startAll, startDevutilProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/server.ts';
import { toolSkip } from '../helpers/tools.ts';

const skip = toolSkip('promtool', ['--version']) || toolSkip('prometheus', ['--version']);

function promtool(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

interface Prometheus {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

async function startPrometheus(
  targets: string[],
  wait: (url: string) => Promise<unknown>,
): Promise<Prometheus> {
  const dir = tempDir('devutil-prom-');
  mkdirSync(join(dir, 'data'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(RULES_FILE)}]`,
      'scrape_configs:',
      '  - job_name: devutil',
      `    static_configs: [{ targets: ${JSON.stringify(targets)} }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (c) => {
    out += c;
  });
  proc.stderr?.on('data', (c) => {
    out += c;
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
  };
  try {
    await wait(url);
  } catch (err) {
    await stop();
    throw new Error(`${String(err)}\n${out.slice(-2000)}`);
  }
  return { url, output: () => out, stop };
}

async function until<T>(what: string, fn: () => Promise<T | null>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface Vector {
  metric: Record<string, string>;
  value: [number, string];
}

async function query(prom: string, q: string): Promise<Vector[]> {
  const r = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(q)}`, {
    signal: AbortSignal.timeout(5000),
  });
  const body = (await r.json()) as { status: string; data: { result: Vector[] } };
  assert.equal(body.status, 'success', `query ${q}`);
  return body.data.result;
}

describe('Prometheus rules and scraping', { skip, timeout: 180_000 }, () => {
  it('promtool check rules accepts the rules file', () => {
    const r = promtool('check', 'rules', RULES_FILE);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${loadRules().length} rules found`));
  });

  it('promtool test rules passes: every alert fires and stays quiet where it should', () => {
    const r = promtool('test', 'rules', RULES_TEST_FILE);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /SUCCESS/);
    // Every alert in the rules file has a case where it fires and one where it stays quiet.
    const doc = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = doc.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const rule of loadRules().filter((x) => x.alert)) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      assert.ok(
        mine.some((c) => c.exp_alerts.length > 0),
        `${rule.alert} is never shown firing`,
      );
      assert.ok(
        mine.some((c) => c.exp_alerts.length === 0),
        `${rule.alert} is never shown quiet`,
      );
    }
  });

  describe('a real Prometheus scraping two nodes', () => {
    let nodes: DevutilProcess[] = [];
    let prom: Prometheus | null = null;
    before(async () => {
      nodes = await startAll([
        startDevutilProcess({ DEVUTIL_FILES_QUOTA_BYTES: '1GiB' }),
        startDevutilProcess({ DEVUTIL_FILES_QUOTA_BYTES: '1GiB' }),
      ]);
      prom = await startPrometheus(
        nodes.map((n) => `127.0.0.1:${n.port}`),
        (url) =>
          until(
            'prometheus /-/ready',
            async () => ((await fetch(`${url}/-/ready`)).ok ? true : null),
            30_000,
          ),
      );
    });
    after(async () => {
      await prom?.stop();
      await Promise.all(nodes.map((n) => n.stop()));
    });

    it('has both targets up and devutil series from both instances', async () => {
      const p = (prom as Prometheus).url;
      const instances = nodes.map((n) => `127.0.0.1:${n.port}`).sort();
      // Traffic on each node, so the request counter has a series there.
      await Promise.all(nodes.map((n) => fetch(`${n.url}/healthz`).then((r) => r.arrayBuffer())));
      const up = await until('both targets up', async () => {
        const v = await query(p, 'up{job="devutil"} == 1');
        return v.length === 2 ? v : null;
      });
      assert.deepEqual(up.map((v) => v.metric['instance']).sort(), instances);
      const served = await until('request counts from both nodes', async () => {
        const v = await query(p, 'sum by (instance) (devutil_http_requests_total{route="/healthz"})');
        return v.length === 2 ? v : null;
      });
      assert.deepEqual(served.map((v) => v.metric['instance']).sort(), instances);
      for (const v of served) assert.ok(Number(v.value[1]) >= 1, JSON.stringify(v));
      // The series the alerts are built on: the quota cap as configured, the blob store up.
      const quota = await query(p, 'devutil_files_quota_bytes');
      assert.deepEqual(
        quota.map((v) => [v.metric['instance'], v.value[1]]).sort(),
        instances.map((i) => [i, String(1024 ** 3)]),
      );
      const blobs = await query(p, 'devutil_dependency_up{dependency="blobs"}');
      assert.deepEqual(
        blobs.map((v) => v.value[1]),
        ['1', '1'],
      );
    });

    it('loads the rules, evaluates them without errors and runs every dashboard query', async () => {
      const p = (prom as Prometheus).url;
      const rules = await until('every rule evaluated', async () => {
        const r = await fetch(`${p}/api/v1/rules`);
        const body = (await r.json()) as {
          data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
        };
        const all = body.data.groups.flatMap((g) => g.rules);
        return all.length > 0 && all.every((x) => x.health !== 'unknown') ? all : null;
      });
      assert.equal(rules.length, loadRules().length);
      for (const r of rules) assert.equal(r.health, 'ok', `${r.name}: ${r.lastError ?? ''}`);
      // Every Grafana panel's query runs (Grafana's $job/$instance set to everything).
      for (const { panel, expr } of dashboardExprs()) {
        const r = await fetch(`${p}/api/v1/query?query=${encodeURIComponent(withVariables(expr))}`);
        const body = (await r.json()) as { status: string; error?: string };
        assert.equal(body.status, 'success', `${panel}: ${expr}: ${body.error ?? ''}`);
      }
      // Nothing is wrong with two idle, healthy nodes: no alert pending or firing.
      const alerts = await query(p, 'ALERTS');
      assert.deepEqual(alerts, []);
    });
  });
});
