// Maps upstream failures to a truthful status and a one-line reason (no stacks; addresses only in a
// refusal by the address guard, which must tell the operator what to allow).
import { refusal, undiciCode } from '../../infra/egress/client.ts';
import { EgressProxyError } from '../../infra/egress/tunnel.ts';
import { AppError } from '../../infra/http/errors.ts';
import type { HeaderMap } from './headers.ts';
import { TargetError } from './target.ts';

/** A refusal or failure of the proxy's own, with its status (and headers, such as Allow). */
export class ProxyError extends Error {
  readonly status: number;
  readonly headers: HeaderMap;
  constructor(status: number, message: string, headers: HeaderMap = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

export interface Failure {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** The system or library error code behind a failure (ECONNRESET, UND_ERR_BODY_TIMEOUT), for logs. */
export function codeOf(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  return String(e?.code ?? e?.cause?.code ?? '');
}

export function classify(err: unknown): Failure {
  if (err instanceof ProxyError) return { status: err.status, message: err.message, headers: err.headers };
  if (err instanceof TargetError) return { status: err.status, message: err.message };
  // An ecosystem's own verdict on an upstream answer (a digest mismatch, a refused realm).
  if (err instanceof AppError) return { status: err.status, message: err.message };
  const cause = (err as { cause?: unknown })?.cause;
  // A refusal by policy: 403, which clients do not retry (npm retried a 502 for 70 s), naming the
  // host, the address and the setting that would allow it.
  const refused = refusal(err);
  if (refused) return { status: 403, message: `upstream address is not allowed: ${refused.message}` };
  const viaProxy = err instanceof EgressProxyError ? err : cause instanceof EgressProxyError ? cause : null;
  if (viaProxy) return { status: 502, message: viaProxy.message };
  if (cause instanceof ProxyError) return { status: cause.status, message: cause.message };
  const und = undiciCode(err);
  if (und === 'UND_ERR_HEADERS_TIMEOUT' || und === 'UND_ERR_CONNECT_TIMEOUT')
    return { status: 504, message: 'upstream timed out' };
  if (und === 'UND_ERR_BODY_TIMEOUT') return { status: 504, message: 'upstream stalled' };
  if (und === 'UND_ERR_ABORTED') return { status: 499, message: 'client went away' };
  const code = codeOf(err);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return { status: 502, message: 'upstream host not found' };
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE')
    return { status: 502, message: 'upstream connection failed' };
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT')
    return { status: 502, message: 'upstream TLS verification failed' };
  if (code === 'ERR_INVALID_CHAR' || code === 'ERR_HTTP_INVALID_HEADER_VALUE')
    return { status: 502, message: 'upstream sent an invalid header' };
  // llhttp's verdicts (HPE_INVALID_CHUNK_SIZE, HPE_INVALID_STATUS, HPE_HEADER_OVERFLOW...).
  if (code.startsWith('HPE_')) return { status: 502, message: 'upstream sent a malformed answer' };
  if (und === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' || und === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH')
    return { status: 502, message: 'upstream body does not match its length' };
  if (und === 'UND_ERR_SOCKET' || und === 'UND_ERR_CLOSED')
    return { status: 502, message: 'upstream connection failed' };
  return { status: 502, message: 'upstream request failed' };
}
