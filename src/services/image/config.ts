// Random image section.
import { bool, rate, str } from '../../infra/schema.ts';

export const imageSection = {
  enabled: bool(true, { doc: 'serve /rest/api/v1/image' }),
  dir: str('', { doc: 'directory of source images (the operator collection); empty = none' }),
  rateLimit: rate('120/min', { doc: 'image requests per client IP' }),
};
