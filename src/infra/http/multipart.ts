// The one multipart/form-data reader: @fastify/multipart (busboy), registered by each utility that
// takes forms with its own limits (`throwFileSizeLimit: true`, so a file past its cap is a 413,
// never a silently truncated one). Files stream their file part; small forms (an avatar and its
// fields) are read whole by readForm. Failures become the client's 400 or the limit's 413.
import type { FastifyRequest } from 'fastify';
import { AppError, badRequest } from './errors.ts';

/** A multipart failure is the client's: 400, unless it already carries a 4xx status (a 413 limit). */
export function multipartError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const status = (err as { statusCode?: number } | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return err;
  return badRequest('malformed multipart body', 'BAD_MULTIPART', { cause: err });
}

export interface Form {
  /** The first file part, whole (within the registered fileSize limit); null without one. */
  file: Buffer | null;
  /** Text fields by lower-case name, each cut to `fieldChars`; a repeated name keeps its last value. */
  fields: Record<string, string>;
}

/** Reads a small form: the first file part buffered, later ones drained, text fields kept. */
export async function readForm(req: FastifyRequest, fieldChars = 512): Promise<Form> {
  const form: Form = { file: null, fields: {} };
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (form.file) part.file.resume();
        else form.file = await part.toBuffer();
      } else if (typeof part.value === 'string') {
        form.fields[part.fieldname.toLowerCase()] = part.value.slice(0, fieldChars);
      }
    }
  } catch (err) {
    throw multipartError(err);
  }
  return form;
}
