// Fast-lane tests: a request over real HTTP from a chosen loopback address (inject() bypasses the
// lane, and each address has a rate-limit window of its own), and an answer's headers without the
// ones made per request, to compare a lane answer with the router's.
import { request } from 'node:http';
import { type LogCapture, type Overrides, type Running, startTestServer } from './server.ts';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export function getFrom(
  url: string,
  from: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false, localAddress: from }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Headers that differ between two answers of one resource. */
export const PER_REQUEST = [
  'date',
  'expires',
  'x-request-id',
  'ratelimit-remaining',
  'ratelimit-reset',
  'connection',
  'keep-alive',
];

/** `h` without the `perRequest` headers, sorted by name (for deepEqual). */
export function stableHeaders(h: Answer['headers'], perRequest: readonly string[] = PER_REQUEST) {
  return Object.fromEntries(
    Object.entries(h)
      .filter(([k]) => !perRequest.includes(k))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/**
 * A server with the fast lane and one without, from `overrides(fastLane)` (`logs` captures the
 * lane's); the first is stopped if the second does not start.
 */
export async function startLanePair(
  overrides: (fastLane: boolean) => Overrides,
  logs?: LogCapture,
): Promise<{ lane: Running; plain: Running }> {
  const lane = await startTestServer({ overrides: overrides(true), ...(logs ? { logs } : {}) });
  try {
    return { lane, plain: await startTestServer({ overrides: overrides(false) }) };
  } catch (err) {
    await lane.close();
    throw err;
  }
}
