// Operator uploads: the Bearer token check (constant time) and reading the image from a raw image
// body or a multipart form (the one multipart reader, infra/http/multipart.ts).
import type { FastifyRequest } from 'fastify';
import { bearerMatches } from '../../infra/http/bearer.ts';
import { AppError, badRequest } from '../../infra/http/errors.ts';
import { readForm } from '../../infra/http/multipart.ts';

export function checkAdmin(header: string | undefined, token: string): void {
  if (!bearerMatches(header, token))
    throw new AppError('UNAUTHORIZED', 401, 'a valid admin token is required', {
      headers: { 'www-authenticate': 'Bearer realm="avatar"' },
    });
}

export interface Upload {
  image: Buffer;
  /** Text fields of a multipart form (rating, email); empty for a raw body. */
  fields: Record<string, string>;
}

export async function readUpload(req: FastifyRequest): Promise<Upload> {
  if (req.isMultipart()) {
    const form = await readForm(req);
    if (!form.file || form.file.length === 0) throw badRequest('the multipart form has no file part');
    return { image: form.file, fields: form.fields };
  }
  const body = req.body;
  if (!Buffer.isBuffer(body))
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      'send the image as image/*, application/octet-stream or multipart/form-data',
    );
  if (body.length === 0) throw badRequest('the request has no image');
  return { image: body, fields: {} };
}
