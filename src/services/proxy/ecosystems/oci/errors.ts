// OCI distribution errors, answered in the profile's envelope (envelope.ts).
import { AppError } from '../../../../infra/http/errors.ts';

type O = { headers?: Record<string, string | number>; cause?: unknown };
export const ociError = (status: number, code: string, message: string, o: O = {}) =>
  new AppError(code, status, message, o);
