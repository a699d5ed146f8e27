// The OCI distribution error shape ({"errors":[{code, message, detail}]}, distribution spec "Error
// Codes") for every answer under /v2/, including the proxy's shared refusals (rate limit, budget,
// client allow-list), whose codes are mapped by status. The profile's definition names it, so it
// loads nothing of the server (errors.ts holds ociError, which the handlers throw).
import type { Envelope } from '../../../../infra/http/envelopes.ts';

/** The spec's codes plus distribution's TAG_INVALID; anything else is mapped from the status. */
const CODES = new Set([
  'BLOB_UNKNOWN',
  'DIGEST_INVALID',
  'MANIFEST_BLOB_UNKNOWN',
  'MANIFEST_INVALID',
  'MANIFEST_UNKNOWN',
  'NAME_INVALID',
  'NAME_UNKNOWN',
  'SIZE_INVALID',
  'TAG_INVALID',
  'UNAUTHORIZED',
  'DENIED',
  'UNSUPPORTED',
  'TOOMANYREQUESTS',
]);

function codeFor(status: number, code: string): string {
  if (CODES.has(code)) return code;
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'DENIED';
  if (status === 404) return 'NAME_UNKNOWN';
  if (status === 405) return 'UNSUPPORTED';
  if (status === 413) return 'SIZE_INVALID';
  if (status === 429) return 'TOOMANYREQUESTS';
  // 400 and 5xx have no code of their own in the spec; clients print the message.
  return status >= 500 ? 'UNAVAILABLE' : 'UNSUPPORTED';
}

export const ociEnvelope: Envelope = {
  contentType: 'application/json; charset=utf-8',
  body: (status, message, code) =>
    JSON.stringify({ errors: [{ code: codeFor(status, code), message, detail: null }] }),
};
