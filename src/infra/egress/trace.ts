// An outbound request in a child span of the request it serves (infra/observe/tracing.ts), with
// the W3C traceparent sent upstream so the upstream's spans join the same trace. Used only while
// the current request is traced; the span lasts until the response body is done with.
import type { Dispatcher } from 'undici';
import { redact } from '../observe/redact.ts';
import { startSpan } from '../observe/tracing.ts';

type Headers = Dispatcher.RequestOptions['headers'];

/** `headers` with `traceparent` set to `value` (any caller-given one replaced), in a shape undici takes. */
export function withTraceparent(headers: Headers, value: string): Headers {
  if (headers == null) return { traceparent: value };
  if (Array.isArray(headers) && (headers.length === 0 || typeof headers[0] === 'string')) {
    const flat = headers as string[];
    const out: string[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2)
      if (flat[i]!.toLowerCase() !== 'traceparent') out.push(flat[i]!, flat[i + 1]!);
    return [...out, 'traceparent', value];
  }
  const entries =
    Symbol.iterator in Object(headers)
      ? [...(headers as Iterable<[string, string | string[] | undefined]>)]
      : Object.entries(headers as Record<string, string | string[] | undefined>);
  const out: Record<string, string | string[] | undefined> = {};
  for (const [k, v] of entries) if (k.toLowerCase() !== 'traceparent') out[k] = v;
  out['traceparent'] = value;
  return out;
}

export async function tracedRequest(
  d: Dispatcher,
  o: Dispatcher.RequestOptions,
): Promise<Dispatcher.ResponseData> {
  let url: URL | undefined;
  try {
    url = new URL(o.path, o.origin === undefined ? undefined : String(o.origin));
  } catch {
    url = undefined;
  }
  const span = startSpan(
    o.method,
    {
      'http.request.method': o.method,
      'server.address': url?.hostname,
      'server.port': url ? Number(url.port || (url.protocol === 'https:' ? 443 : 80)) : undefined,
      'url.full': url ? redact(url.href) : undefined,
    },
    'client',
  );
  if (!span) return d.request(o);
  try {
    const res = await d.request({ ...o, headers: withTraceparent(o.headers, span.traceparent) });
    span.set({ 'http.response.status_code': res.statusCode });
    if (res.statusCode >= 400) span.set({ 'error.type': String(res.statusCode) });
    // 'close' comes after the end, a failure or a destroy; no 'error' listener here: it would
    // change what an unhandled body error does.
    res.body.once('close', () => {
      if (res.body.errored) span.fail(res.body.errored);
      span.end();
    });
    return res;
  } catch (err) {
    span.fail(err);
    span.end();
    throw err;
  }
}
