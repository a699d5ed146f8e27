// What the /api/file routes share (docs/protocols/public-interface.md §2): the key parameter, the
// owner token and the upload answer (POST and tus give the same one).
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../infra/http/errors.ts';
import { validKey } from './names.ts';
import type { UploadResult } from './store.ts';

export type KeyReq = FastifyRequest<{ Params: { key: string } }>;

export const params = {
  type: 'object',
  properties: {
    key: { type: 'string', description: 'the key: 1-128 of A-Z a-z 0-9 . _ - not starting with "."' },
  },
} as const;

export function keyOf(req: KeyReq): string {
  const key = req.params.key;
  if (!validKey(key)) throw badKey();
  return key;
}

export function badKey() {
  return badRequest(
    'invalid key: use 1-128 characters of A-Z a-z 0-9 . _ - not starting with "."',
    'BAD_KEY',
  );
}

/** The owner token from X-Owner-Token or Authorization: Bearer. */
export function tokenOf(req: FastifyRequest): string | undefined {
  const h = req.headers['x-owner-token'];
  if (typeof h === 'string' && h.trim()) return h.trim();
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m?.[1];
}

/** The 2.1 upload result (plus data.lifetime when limits were set): one shape for POST and tus. */
export function uploadAnswer(key: string, out: UploadResult) {
  const data = { key, file_info: out.info, ...(out.lifetime ? { lifetime: out.lifetime } : {}) };
  return { success: true, message: 'file uploaded', data };
}
