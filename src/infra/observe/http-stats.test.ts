import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { HttpStats } from './http-stats.ts';

describe('HttpStats', () => {
  it('exports counts, errors and a cumulative latency histogram in Prometheus text', async () => {
    const reg = new Registry();
    const s = new HttpStats();
    s.register(reg);
    s.record('ip', '/r', 'GET', 200, 0.0004);
    s.record('ip', '/r', 'GET', 200, 0.003);
    s.record('ip', '/r', 'GET', 429, 100);
    const text = await reg.metrics();
    assert.match(text, /devutil_http_requests_total\{svc="ip",route="\/r",method="GET",status="200"\} 2/);
    assert.match(text, /devutil_http_errors_total\{svc="ip",route="\/r",status="429"\} 1/);
    assert.match(text, /_bucket\{le="0.0005",svc="ip",route="\/r",method="GET"\} 1\n/);
    assert.match(text, /_bucket\{le="0.005",svc="ip",route="\/r",method="GET"\} 2\n/);
    assert.match(text, /_bucket\{le="30",svc="ip",route="\/r",method="GET"\} 2\n/);
    assert.match(text, /_bucket\{le="\+Inf",svc="ip",route="\/r",method="GET"\} 3\n/);
    assert.match(text, /_count\{svc="ip",route="\/r",method="GET"\} 3\n/);
  });
});
