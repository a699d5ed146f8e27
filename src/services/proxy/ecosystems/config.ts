// Each ecosystem's own settings, spread into the proxy's config section (DEVUTIL_PROXY_<KEY>): keys
// start with the ecosystem's name (ociTagTtlSec -> DEVUTIL_PROXY_OCI_TAG_TTL_SEC).
import { goFields } from './go/config.ts';
import { hfFields } from './hf/config.ts';
import { mavenFields } from './maven/config.ts';
import { npmFields } from './npm/config.ts';
import { ociFields } from './oci/config.ts';

export const ecosystemFields = { ...ociFields, ...hfFields, ...npmFields, ...goFields, ...mavenFields };
