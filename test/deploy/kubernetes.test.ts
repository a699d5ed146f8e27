// deploy/kubernetes: every object of the kustomize base is valid against the Kubernetes schemas
// (kubernetes-models), rendered by `kubectl kustomize` when kubectl is here, else read from the
// files the kustomization lists; the probes and grace period agree with the drain settings.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { hasTool } from '../helpers/tools.ts';

const DIR = new URL('../../deploy/kubernetes/', import.meta.url).pathname;
type Obj = { apiVersion: string; kind: string; metadata: { name: string }; [k: string]: unknown };
const MODELS: Record<string, new (o: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'networking.k8s.io/v1/Ingress': Ingress,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

function docs(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj)
    .filter(Boolean);
}

function objects(): Obj[] {
  if (hasTool('kubectl', ['version', '--client'])) {
    const r = spawnSync('kubectl', ['kustomize', DIR], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    return docs(r.stdout);
  }
  const k = docs(readFileSync(`${DIR}kustomization.yaml`, 'utf8'))[0] as unknown as { resources: string[] };
  return k.resources.flatMap((f) => docs(readFileSync(DIR + f, 'utf8')));
}

describe('deploy/kubernetes', { timeout: 60_000 }, () => {
  const all = objects();
  const find = (kind: string, name: string) => {
    const o = all.find((x) => x.kind === kind && x.metadata.name === name);
    assert.ok(o, `${kind}/${name} missing`);
    return o as Obj & Record<string, any>;
  };

  it('has every object the base promises, each valid against its schema', () => {
    for (const [k, n] of [
      ['Deployment', 'devutil'],
      ['Service', 'devutil'],
      ['Ingress', 'devutil'],
      ['HorizontalPodAutoscaler', 'devutil'],
      ['PodDisruptionBudget', 'devutil'],
      ['Secret', 'devutil'],
      ['Service', 'devutil-relay'],
      ['Deployment', 'devutil-relay'],
    ])
      find(k as string, n as string);
    for (const o of all) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      assert.ok(Model, `no schema for ${o.apiVersion} ${o.kind}`);
      assert.doesNotThrow(() => new Model(o as never).validate(), `${o.kind}/${o.metadata.name}`);
    }
  });

  it('the schema check can fail: a wrong type is refused', () => {
    const bad = structuredClone(find('Deployment', 'devutil'));
    bad['spec'].replicas = 'two';
    assert.throws(() => new Deployment(bad as never).validate());
  });

  it('probes and grace period agree with the drain, Redis/S3 come from the Secret, relay on TCP 22067', () => {
    const cm = find('ConfigMap', 'devutil')['data'];
    const drain = Number(cm.DEVUTIL_DRAIN_DELAY_MS);
    const shutdown = Number(cm.DEVUTIL_SHUTDOWN_TIMEOUT_MS);
    assert.ok(shutdown > drain);
    const web = find('Deployment', 'devutil')['spec'].template.spec;
    assert.ok(web.terminationGracePeriodSeconds * 1000 > shutdown);
    const c = web.containers[0];
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.ok(c.readinessProbe.periodSeconds * c.readinessProbe.failureThreshold * 1000 < drain);
    assert.ok(c.envFrom.some((e: any) => e.secretRef?.name === 'devutil'));
    const secret = find('Secret', 'devutil')['stringData'];
    for (const k of [
      'DEVUTIL_REDIS_URL',
      'DEVUTIL_STORAGE_S3_BUCKET',
      'DEVUTIL_STORAGE_S3_SECRET_ACCESS_KEY',
    ])
      assert.ok(k in secret, k);
    // The PlantUML JVM's heap is inside the memory request.
    const mib = (q: string) => Number(q.replace(/Gi$/, '')) * 1024 || Number(q.replace(/Mi$/, ''));
    assert.ok(mib(c.resources.requests.memory) > 512 + 256);
    const relay = find('Service', 'devutil-relay')['spec'].ports[0];
    assert.equal(relay.port, 22067);
    assert.equal(relay.protocol, 'TCP');
  });
});
