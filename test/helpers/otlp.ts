// An OTLP/HTTP trace receiver stand-in on loopback: takes POST /v1/traces like a collector,
// decodes OTLP JSON into plain spans and keeps protobuf bodies as they came (no decoder here).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** The resource's service.name. */
  service: string;
}

export interface OtlpRequest {
  path: string;
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
type KeyValue = { key: string; value: AnyValue };

function value(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  return '';
}

function attrs(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list ?? []) out[kv.key] = value(kv.value);
  return out;
}

interface JsonExport {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

/** The spans of one OTLP JSON export request (ids as lowercase hex, as OTLP/JSON writes them). */
export function decodeJson(body: Buffer): OtlpSpan[] {
  const doc = JSON.parse(body.toString('utf8')) as JsonExport;
  const out: OtlpSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: s.traceId.toLowerCase(),
          spanId: s.spanId.toLowerCase(),
          parentSpanId: (s.parentSpanId ?? '').toLowerCase(),
          name: s.name,
          kind: s.kind,
          attributes: attrs(s.attributes),
          status: s.status?.code ?? 0,
          service,
        });
  }
  return out;
}

export class OtlpReceiver {
  readonly spans: OtlpSpan[] = [];
  readonly requests: OtlpRequest[] = [];
  private readonly server: Server;
  url = '';

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const contentType = String(req.headers['content-type'] ?? '');
        this.requests.push({ path: req.url ?? '', contentType, headers: req.headers, body });
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        if (contentType.startsWith('application/json')) {
          try {
            this.spans.push(...decodeJson(body));
          } catch {
            res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
            return;
          }
        }
        // An empty ExportTraceServiceResponse: full success.
        if (contentType.startsWith('application/json'))
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
  }

  static async start(): Promise<OtlpReceiver> {
    const r = new OtlpReceiver();
    await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', ok));
    r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}`;
    return r;
  }

  /** Waits (up to `ms`) until `pick` finds what it looks for among the spans received so far. */
  waitFor<T>(what: string, pick: (spans: OtlpSpan[]) => T | undefined, ms = 20_000): Promise<T> {
    return this.until(what, () => pick(this.spans), ms);
  }

  /** Waits (up to `ms`) until `probe` returns something (received requests, spans). */
  async until<T>(what: string, probe: () => T | undefined, ms = 20_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = probe();
      if (found !== undefined) return found;
      if (Date.now() > deadline)
        throw new Error(
          `no ${what} after ${this.requests.length} exports (${this.spans.map((s) => s.name).join(', ')})`,
        );
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  close(): Promise<void> {
    return new Promise((ok) => {
      this.server.closeAllConnections();
      this.server.close(() => ok());
    });
  }
}
