// The file store's figures on the operator's dashboard (see Dashboard in ../define.ts): the bytes
// stored against DEVUTIL_FILES_QUOTA_BYTES, as index.ts reports them in /metrics (counted over every
// instance when they share Redis).
import type { ServiceContext } from '../../context.ts';
import { total } from '../../infra/observe/series.ts';
import type { Dashboard } from '../define.ts';

export function filesDashboard(ctx: ServiceContext): Dashboard {
  return {
    async quota() {
      const limit = ctx.config.files.quotaBytes;
      if (limit <= 0) return null;
      const used = await total(ctx.metrics.registry, 'devutil_files_stored_bytes');
      return used === null ? null : { used, limit };
    },
  };
}
