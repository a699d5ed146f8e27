// npm mount settings (DEVUTIL_PROXY_NPM_*).
import { httpsUrl } from '../fields.ts';

export const npmFields = {
  npmRegistry: httpsUrl(
    'https://registry.npmjs.org',
    'upstream registry of the npm mount (a regional mirror works too)',
  ),
};
