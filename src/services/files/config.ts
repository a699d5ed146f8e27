// File storage section: limits, compression, retention and the blob backend (also used by avatars).
import { bool, bytes, int, oneOf, rate, str, url } from '../../infra/schema.ts';

export const filesSection = {
  enabled: bool(true, { doc: 'serve the file storage API under /api/file' }),
  maxBytes: bytes(512 * 1024 ** 2, { min: 1, doc: 'largest upload, in bytes or with a unit (512MiB)' }),
  quotaBytes: bytes(0, { doc: 'total bytes the stored files may take; 507 when full (0 = no quota)' }),
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
  maxAgeSec: int(0, { min: 0, doc: 'retention: delete files older than this many seconds (0 = keep)' }),
  minAgeSec: int(0, {
    min: 0,
    doc: 'if set (below max_age_sec), 0x0.st rule: small files live max_age_sec, the largest min_age_sec',
  }),
  sweepIntervalSec: int(3600, { min: 1, doc: 'how often the retention sweeper runs' }),
  backend: oneOf('fs', ['fs', 's3'] as const, {
    doc: 'blob storage: fs (under the data directory) or s3 (any S3-compatible store)',
  }),
  s3Endpoint: url('', { optional: true, doc: 'S3 endpoint URL (empty = AWS for the region)' }),
  s3Bucket: str('', { doc: 'S3 bucket (required when backend=s3)' }),
  s3Region: str('us-east-1', { doc: 'S3 region (R2: auto)' }),
  s3AccessKeyId: str('', { doc: 'S3 access key id (empty = the SDK default credential chain)' }),
  s3SecretAccessKey: str('', { secret: true, doc: 'S3 secret access key' }),
  s3ForcePathStyle: bool(false, { doc: 'path-style URLs (MinIO, s3rver); AWS and R2 use virtual hosts' }),
  s3TimeoutMs: int(10_000, {
    min: 100,
    doc: 'S3 socket inactivity timeout; a down or hung store answers 503 after about twice this',
  }),
};
