// Metric names in Prometheus text and in PromQL, so the shipped rules and dashboard can be checked
// against what devutil really exports (a renamed metric fails the test, not an operator's alert).
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const ROOT = new URL('../..', import.meta.url).pathname;
export const RULES_FILE = `${ROOT}deploy/prometheus/devutil-rules.yml`;
export const RULES_TEST_FILE = `${ROOT}deploy/prometheus/devutil-rules.test.yml`;
export const DASHBOARD_FILE = `${ROOT}deploy/grafana/devutil-dashboard.json`;

/** Every series name a Prometheus text exposition declares (`# TYPE`), histograms' and summaries' parts included. */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = m;
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

/**
 * The metric names a PromQL expression selects: devutil_* series, recording rules (level:metric:op)
 *, `up` and `ALERTS`. Quoted label values are dropped first, so `{budget="proxy"}` names nothing.
 */
export function referencedNames(expr: string): Set<string> {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const names = new Set<string>();
  for (const m of bare.matchAll(
    /(?<![\w:$])([a-z_]+:[a-z0-9_]+:[a-z0-9_]+|devutil_[a-z0-9_]+|up|ALERTS)(?![\w:])/g,
  ))
    names.add(m[1] as string);
  return names;
}

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
}

export function loadRules(): Rule[] {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every PromQL expression of the shipped Grafana dashboard, with the panel it is in. */
export function dashboardExprs(): { panel: string; expr: string }[] {
  const dash = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as { panels: Panel[] };
  const out: { panel: string; expr: string }[] = [];
  const walk = (ps: Panel[]) => {
    for (const p of ps) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ panel: p.title ?? '?', expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dash.panels);
  return out;
}

/** A dashboard expression as Prometheus gets it: Grafana's variables set to "everything". */
export function withVariables(expr: string): string {
  return expr.replace(/\$job|\$instance/g, '.*');
}
