// Set-me-up section: the script has no settings of its own; what it writes comes from the proxy's
// and the relay's (their public URLs, DEVUTIL_PROXY_ECOSYSTEMS, the allow-list).
import { bool } from '../../infra/config/schema.ts';

export const setupSection = {
  enabled: bool(true, {
    doc: 'serve /setup.sh, which points git, pip, apt, npm, go, Docker and Hugging Face clients at this instance',
  }),
};
