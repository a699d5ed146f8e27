// File storage section.
import { bool, bytes, rate } from '../../infra/schema.ts';

export const filesSection = {
  enabled: bool(true, { doc: 'serve the file storage API under /api/file' }),
  maxBytes: bytes(512 * 1024 ** 2, { min: 1, doc: 'largest upload, in bytes or with a unit (512MiB)' }),
  rateLimit: rate('60/min', { doc: 'uploads per client IP' }),
};
