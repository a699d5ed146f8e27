// strelaysrv's /status endpoint (docs/protocols/syncthing-relay.md §11): the same field names, sorted keys,
// 4-space JSON, CORS open, no keep-alive; plus the 10 s rate sampler behind kbps10s1m5m15m30m60m.
import type { Server } from 'node:http';
import { nodeHttp } from '../../infra/http/node-http.ts';

const WINDOWS_S = [10, 60, 300, 900, 1800, 3600];
const SAMPLE_S = 10;

/** Samples a growing byte total every 10 s and averages it over strelaysrv's six windows. */
export class RateSampler {
  private samples: number[] = [0];
  private timer: NodeJS.Timeout;

  private readonly total: () => number;
  constructor(total: () => number) {
    this.total = total;
    this.timer = setInterval(() => this.sample(), SAMPLE_S * 1000);
    this.timer.unref();
  }

  sample(): void {
    this.samples.push(this.total());
    if (this.samples.length > 3600 / SAMPLE_S + 1) this.samples.shift();
  }

  /** kbit/s over the last 10 s, 1, 5, 15, 30 and 60 min (whole numbers, like strelaysrv). */
  kbps(): number[] {
    const n = this.samples.length;
    const last = this.samples[n - 1] ?? 0;
    return WINDOWS_S.map((w) => {
      const back = w / SAMPLE_S;
      const first = this.samples[Math.max(0, n - 1 - back)] ?? 0;
      return Math.floor(((last - first) * 8) / 1000 / w);
    });
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** Recursively sorts object keys so the JSON matches Go's map order. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

export function statusJson(status: object): string {
  return `${JSON.stringify(sorted(status), null, 4)}\n`;
}

export function createStatusServer(status: () => object): Server {
  const server = nodeHttp.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    res.setHeader('Connection', 'close');
    if (path !== '/status') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('404 page not found\n');
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Access-Control-Allow-Origin': '*',
    });
    res.end(statusJson(status()));
  });
  server.keepAliveTimeout = 0;
  server.requestTimeout = 15_000;
  server.headersTimeout = 15_000;
  return server;
}
