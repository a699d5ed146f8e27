// Tracing's pure parts: the OTel environment names mapped into config, the exporter headers'
// format, traceparent injection into every header shape undici takes, and the off path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../config.ts';
import { withTraceparent } from '../egress/trace.ts';
import { inSpan, parseHeaders, startSpan, Tracing, tracingActive } from './tracing.ts';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing config', { timeout: 30_000 }, () => {
  it('is off by default', async () => {
    const { config } = loadConfig({ env: {} });
    assert.equal(config.tracing.endpoint, '');
    assert.equal(config.tracing.tracesEndpoint, '');
    assert.equal(await Tracing.start(config.tracing, '0', pino({ enabled: false })), null);
  });

  it("reads OpenTelemetry's own environment variables", () => {
    const { config, warnings } = loadConfig({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/v1/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'api-key=abc,x-tenant=t1',
        OTEL_SERVICE_NAME: 'devutil-eu',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_BSP_SCHEDULE_DELAY: '1000',
        OTEL_EXPORTER_OTLP_TIMEOUT: '3000',
      },
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(
      { ...config.tracing },
      {
        endpoint: 'http://collector:4318',
        tracesEndpoint: 'https://traces.example/v1/traces',
        protocol: 'http/json',
        headers: 'api-key=abc,x-tenant=t1',
        serviceName: 'devutil-eu',
        sampler: 'parentbased_traceidratio',
        samplerArg: '0.25',
        scheduleDelayMs: 1000,
        exportTimeoutMs: 3000,
      },
    );
  });

  it('refuses bad values naming the variable', () => {
    assert.throws(
      () =>
        loadConfig({
          env: {
            OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
            OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
            OTEL_TRACES_SAMPLER: 'sometimes',
            OTEL_TRACES_SAMPLER_ARG: '1.5',
            OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign',
          },
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        for (const name of [
          'OTEL_EXPORTER_OTLP_ENDPOINT',
          'OTEL_EXPORTER_OTLP_PROTOCOL',
          'OTEL_TRACES_SAMPLER:',
          'OTEL_TRACES_SAMPLER_ARG',
          'OTEL_EXPORTER_OTLP_HEADERS',
        ])
          assert.ok(
            err.problems.some((p) => p.startsWith(name)),
            `${name} not reported: ${err.message}`,
          );
        return true;
      },
    );
  });

  it('parses exporter headers as the OTel spec writes them', () => {
    assert.deepEqual(parseHeaders('Api-Key=a%20b, x-t = 1 ,bad,=x'), { 'api-key': 'a b', 'x-t': '1' });
    assert.deepEqual(parseHeaders(''), {});
  });
});

describe('traceparent injection', { timeout: 30_000 }, () => {
  it('adds traceparent to every header shape, replacing a caller-given one', () => {
    assert.deepEqual(withTraceparent(undefined, TP), { traceparent: TP });
    assert.deepEqual(withTraceparent({ accept: '*/*', TraceParent: 'old' }, TP), {
      accept: '*/*',
      traceparent: TP,
    });
    assert.deepEqual(withTraceparent(['accept', '*/*', 'traceparent', 'old'], TP), [
      'accept',
      '*/*',
      'traceparent',
      TP,
    ]);
    assert.deepEqual(withTraceparent(new Map([['accept', 'a']]) as never, TP), {
      accept: 'a',
      traceparent: TP,
    });
  });
});

describe('tracing off', { timeout: 30_000 }, () => {
  it('runs work as a plain call with no span', async () => {
    assert.equal(tracingActive(), false);
    assert.equal(startSpan('x', {}), undefined);
    let seen: unknown = 'unset';
    assert.equal(
      await inSpan('x', {}, async (span) => {
        seen = span;
        return 42;
      }),
      42,
    );
    assert.equal(seen, undefined);
  });
});
