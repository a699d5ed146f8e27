import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startRedis } from '../../../test/helpers/redis.ts';
import { buildTestServer } from '../../../test/helpers/server.ts';
import { dependencyMetrics } from './dependencies.ts';
import { Metrics } from './metrics.ts';
import { Readiness } from './readiness.ts';

describe('devutil_dependency_up', { timeout: 60_000 }, () => {
  it('is 1 for a passing check, 0 for a failing, throwing or silent one', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const readiness = new Readiness({ timeoutMs: 100 });
    readiness.add('good', () => ({ ok: true }), ['ip']);
    readiness.add('bad', () => ({ ok: false, detail: 'down' }), ['ip']);
    readiness.add('throws', () => {
      throw new Error('boom');
    }, ['ip']);
    readiness.add('hangs', () => new Promise(() => {}), ['ip']);
    dependencyMetrics(metrics, async () => (await readiness.report(['ip'])).checks);
    const text = await metrics.registry.metrics();
    assert.match(text, /devutil_dependency_up\{dependency="good"\} 1\n/);
    assert.match(text, /devutil_dependency_up\{dependency="bad"\} 0\n/);
    assert.match(text, /devutil_dependency_up\{dependency="throws"\} 0\n/);
    assert.match(text, /devutil_dependency_up\{dependency="hangs"\} 0\n/);
  });

  it('a failing source gives no series rather than a failed scrape', async () => {
    const metrics = new Metrics({ processMetrics: false });
    dependencyMetrics(metrics, () => Promise.reject(new Error('no')));
    const text = await metrics.registry.metrics();
    assert.doesNotMatch(text, /devutil_dependency_up\{/);
  });

  it('follows a real Redis going away and coming back on GET /metrics', async () => {
    const redis = await startRedis();
    after(() => redis.stop());
    const app = await buildTestServer({
      env: { DEVUTIL_REDIS_URL: redis.url, DEVUTIL_REDIS_COMMAND_TIMEOUT_MS: '500' },
    });
    after(() => app.close());
    const scrape = async () => (await app.inject({ url: '/metrics' })).body;
    assert.match(await scrape(), /devutil_dependency_up\{dependency="redis"\} 1\n/);
    assert.match(await scrape(), /devutil_dependency_up\{dependency="blobs"\} 1\n/);
    // /readyz's checks answer from a result at most a second old and refresh behind it: poll.
    const until = async (re: RegExp) => {
      let text = '';
      for (let i = 0; i < 100 && !re.test(text); i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 200));
        text = await scrape();
      }
      return text;
    };
    redis.signal('SIGSTOP');
    try {
      const down = await until(/devutil_dependency_up\{dependency="redis"\} 0\n/);
      assert.match(down, /devutil_dependency_up\{dependency="redis"\} 0\n/);
      assert.match(down, /devutil_dependency_up\{dependency="blobs"\} 1\n/);
    } finally {
      redis.signal('SIGCONT');
    }
    assert.match(
      await until(/devutil_dependency_up\{dependency="redis"\} 1\n/),
      /devutil_dependency_up\{dependency="redis"\} 1\n/,
    );
  });
});
