// Whether a download's bytes can be sent by someone else: nginx (X-Accel-Redirect to the body
// file, fs backend) or S3 (a 302 to a presigned URL). Only when what they would send is exactly
// what the client must get: the stored bytes, whole or by the client's Range, never decoded ones.
import { acceptsEncoding } from '../../infra/http/encoding.ts';
import type { StoredFile } from './store.ts';

export interface OffloadConfig {
  /** nginx internal location prefix ("/_devutil_files/"); empty = off. */
  accelPrefix: string;
  /** Redirect to presigned URLs (the store must support them). */
  presign: boolean;
}

export type Offload =
  | { kind: 'accel'; location: string; encoded: boolean }
  | { kind: 'presign'; encoded: boolean }
  | null;

interface Req {
  method: string;
  headers: Record<string, string | string[] | undefined>;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export function offloadOf(file: StoredFile, req: Req, o: OffloadConfig): Offload {
  // HEAD and empty files cost nothing to answer here; a presigned URL is signed for GET only.
  if (req.method !== 'GET' || file.size === 0) return null;
  const range = one(req.headers['range']) !== undefined;
  let encoded = false;
  if (file.encoding !== 'identity') {
    // Ranges address the decoded bytes and a client without the coding needs them decoded: both
    // are devutil's work. A client that takes the coding gets the stored bytes whole.
    if (range || !acceptsEncoding(req.headers['accept-encoding'], file.encoding)) return null;
    encoded = true;
  }
  if (o.accelPrefix && file.bodyFile)
    return { kind: 'accel', location: o.accelPrefix + file.bodyFile, encoded };
  // S3 compares If-Range with its own ETag, never ours: such a request would always get the whole.
  if (o.presign && one(req.headers['if-range']) === undefined) return { kind: 'presign', encoded };
  return null;
}

/** Content-Disposition in ASCII for S3 (the name itself in filename*, RFC 6266 and 8187). */
export function asciiDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const ext = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return fallback === filename
    ? `attachment; filename="${filename}"`
    : `attachment; filename="${fallback}"; filename*=UTF-8''${ext}`;
}
