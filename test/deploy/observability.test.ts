// The shipped Prometheus rules and Grafana dashboard name only series devutil exports (read from
// GET /metrics of a real server, the relay's series included) or the rules record, so renaming a
// metric fails here rather than silently emptying a panel or an alert. The tools' own checks
// (promtool, a real Prometheus running every expression) are in test/e2e/prometheus.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Metrics } from '../../src/infra/observe/metrics.ts';
import { relayMetrics } from '../../src/services/relay/background.ts';
import {
  DASHBOARD_FILE,
  dashboardExprs,
  exportedNames,
  loadRules,
  referencedNames,
} from '../helpers/metric-names.ts';
import { buildTestServer } from '../helpers/server.ts';

describe('rules and dashboard name real series', { timeout: 120_000 }, () => {
  let app: FastifyInstance;
  const known = new Set<string>(['up', 'ALERTS']);
  before(async () => {
    app = await buildTestServer({ env: { DEVUTIL_FILES_QUOTA_BYTES: '1GiB' } });
    const text = (await app.inject({ url: '/metrics' })).body;
    for (const n of exportedNames(text)) known.add(n);
    // The relay registers its series when its listener starts (not in an injected server).
    const relay = new Metrics({ processMetrics: false });
    relayMetrics(relay, () => null);
    for (const n of exportedNames(await relay.registry.metrics())) known.add(n);
    for (const r of loadRules()) if (r.record) known.add(r.record);
  });
  after(() => app?.close());

  it('reads names the way the checks below rely on', () => {
    assert.deepEqual(
      [
        ...referencedNames(
          'sum by (svc) (rate(devutil_a_total{x="devutil_b"}[5m])) / a:devutil_c:ratio and up',
        ),
      ],
      ['devutil_a_total', 'a:devutil_c:ratio', 'up'],
    );
    assert.ok(known.has('devutil_http_requests_total'));
    assert.ok(known.has('devutil_http_request_duration_seconds_bucket'));
    assert.ok(known.has('devutil_dependency_up'));
    assert.ok(known.has('devutil_relay_refused_total'));
    assert.ok(!known.has('devutil_nope_total'));
  });

  it('every rule expression selects series devutil exports or the rules record', () => {
    for (const r of loadRules())
      for (const n of referencedNames(r.expr))
        assert.ok(known.has(n), `${r.record ?? r.alert}: unknown series ${n}`);
  });

  it('every dashboard expression selects known series, and every panel has one', () => {
    const exprs = dashboardExprs();
    assert.ok(exprs.length >= 20, `only ${exprs.length} expressions`);
    for (const { panel, expr } of exprs) {
      const names = referencedNames(expr);
      assert.ok(names.size > 0, `${panel}: no series in ${expr}`);
      for (const n of names) assert.ok(known.has(n), `${panel}: unknown series ${n}`);
    }
  });

  it('the dashboard covers every alert topic and uses its data source variable', () => {
    const all = dashboardExprs()
      .map((e) => e.expr)
      .join('\n');
    for (const s of [
      'svc:devutil_http_5xx:ratio5m',
      'budget:devutil_budget_used:ratio',
      'job:devutil_files_quota_used:ratio',
      'devutil_plantuml_queue_limit',
      'devutil_relay_refused_total',
      'devutil_dependency_up',
      'up{',
    ])
      assert.ok(all.includes(s), `no panel shows ${s}`);
    const dash = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as {
      uid: string;
      panels: { id: number; datasource?: { uid?: string } }[];
      templating: { list: { name: string }[] };
    };
    assert.deepEqual(
      dash.templating.list.map((v) => v.name),
      ['datasource', 'job', 'instance'],
    );
    const ids = dash.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
    for (const p of dash.panels) if (p.datasource) assert.equal(p.datasource.uid, '${datasource}');
  });
});
