// File storage section: limits, compression and retention (the blob backend is the storage section).

import { bool, bytes, duration, int, oneOf, rate } from '../../infra/config/schema.ts';
import { accelPrefix } from '../../infra/http/accel.ts';

export const filesSection = {
  enabled: bool(true, { doc: 'serve the file storage API under /api/file' }),
  maxBytes: bytes(512 * 1024 ** 2, { min: 1, doc: 'largest upload, in bytes or with a unit (512MiB)' }),
  quotaBytes: bytes(0, {
    doc: 'total bytes the stored files (and unfinished resumable uploads) may take, reserved before each upload is stored (shared through Redis); 507 when full, 503 while Redis is unreachable (0 = no quota)',
  }),
  quotaCheckSec: duration(600, {
    unit: 's',
    min: 10,
    doc: 'how often the quota count is checked against a listing of the store and corrected (also at start-up and when Redis answers again after failing)',
  }),
  rateLimit: rate('60/min', { doc: 'uploads per client IP' }),
  codec: oneOf('br', ['br', 'gzip', 'none'] as const, {
    doc: 'compression for stored files (br chosen by measurement, see docs/files.md)',
  }),
  level: int(4, { min: 1, max: 11, doc: 'codec level (brotli quality 1-11, gzip 1-9)' }),
  minSavingPercent: int(10, {
    min: 0,
    max: 99,
    doc: 'keep the compressed copy only when it saves at least this share of the size',
  }),
  maxAgeSec: duration(0, {
    unit: 's',
    min: 0,
    doc: 'retention: delete files older than this many seconds (0 = keep)',
  }),
  minAgeSec: duration(0, {
    unit: 's',
    min: 0,
    doc: 'if set (below max_age_sec), 0x0.st rule: small files live max_age_sec, the largest min_age_sec',
  }),
  sweepIntervalSec: duration(3600, { unit: 's', min: 1, doc: 'how often the retention sweeper runs' }),
  accelRedirect: accelPrefix(
    'behind nginx, with the fs backend: answer downloads with X-Accel-Redirect to <prefix><body file> so nginx sends the bytes (an internal location aliasing <data_dir>/blobs/.data/; docs/deployment.md)',
  ),
  maxDownloadsLimit: int(10_000, {
    min: 1,
    doc: 'largest Max-Downloads an upload may ask for (larger is 400)',
  }),
  maxDaysLimit: int(365, {
    min: 1,
    max: 36_500,
    doc: 'largest Max-Days an upload may ask for (larger is 400)',
  }),
  resumeGraceSec: duration(3600, {
    unit: 's',
    min: 0,
    doc: 'after the last allowed download started, Range continuations are served this long, then the file is deleted',
  }),
  resumableOverBytes: bytes(16 * 1024 ** 2, {
    doc: 'the home page sends files larger than this with tus, resuming after a dropped connection (0 = always)',
  }),
  uploadExpirySec: duration(86_400, {
    unit: 's',
    min: 1,
    doc: 'an unfinished resumable (tus) upload is removed this long after its last write (Upload-Expires)',
  }),
  uploadRateLimit: rate('600/min', {
    doc: 'resumable upload requests (HEAD, PATCH, DELETE) per client (IPv6: its network); creation counts as an upload (rate_limit)',
  }),
  bundleMaxFiles: int(20, {
    min: 1,
    max: 1000,
    doc: 'most files in one multipart upload to / (a bundle) and in one zip download',
  }),
  bundleMaxBytes: bytes(1024 ** 3, {
    min: 1,
    doc: 'largest total of one multipart upload to / (each file also within max_bytes), and of one zip download',
  }),
  qrRateLimit: rate('300/min', { doc: 'QR codes (/qr.svg) per client' }),
  passwordRateLimit: rate('30/min', {
    doc: 'downloads with X-Decrypt-Password per client: each costs a key derivation, and a wrong password is a guess',
  }),
  passwordConcurrency: int(2, {
    min: 1,
    max: 64,
    doc: 'password key derivations (16 MiB of SHA-256 each) running at once per process; more wait in a fair queue (16 per slot), past it 503',
  }),
  uploadLockWaitMs: duration(2000, {
    unit: 'ms',
    min: 0,
    doc: 'how long a PATCH or HEAD waits for another request on the same upload before 423 Locked',
  }),
  uploadLockTtlMs: duration(6000, {
    unit: 'ms',
    min: 1000,
    doc: 'lease of the request writing an upload, renewed every third of it: a crashed holder frees the upload this long after its last renewal, and a holder that cannot renew in time stops writing',
  }),
};
