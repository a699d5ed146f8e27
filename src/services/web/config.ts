// Web page section.
import { bool } from '../../infra/schema.ts';

export const webSection = {
  enabled: bool(true, { doc: 'serve the home page (/) and its assets (/assets/)' }),
};
