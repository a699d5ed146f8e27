// Web page section.
import { bool } from '../../infra/config/schema.ts';

export const webSection = {
  enabled: bool(true, { doc: 'serve the home page (/) and its assets (/assets/)' }),
};
