// Operator uploads: the Bearer token check (constant time) and reading the image from a raw image
// body or a multipart form (parsed by the platform's own FormData, no extra dependency).
import { AppError, badRequest } from '../../errors.ts';
import { bearerMatches } from '../../infra/http/bearer.ts';

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

export async function readUpload(contentType: string | undefined, body: unknown): Promise<Upload> {
  if (!Buffer.isBuffer(body))
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      415,
      'send the image as image/*, application/octet-stream or multipart/form-data',
    );
  if (body.length === 0) throw badRequest('the request has no image');
  if (!/^multipart\/form-data/i.test(contentType ?? '')) return { image: body, fields: {} };
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), { headers: { 'content-type': contentType! } }).formData();
  } catch {
    throw badRequest('malformed multipart body');
  }
  const fields: Record<string, string> = {};
  let image: Buffer | null = null;
  let file: Blob | null = null;
  form.forEach((value, name) => {
    if (typeof value === 'string') fields[name.toLowerCase()] = value.slice(0, 512);
    else file ??= value;
  });
  if (file) image = Buffer.from(await (file as Blob).arrayBuffer());
  if (!image) throw badRequest('the multipart form has no file part');
  return { image, fields };
}
