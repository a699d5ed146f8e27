// Each ecosystem's own settings, spread into the proxy's config section (DEVUTIL_PROXY_<KEY>): keys
// start with the ecosystem's name (ociTagTtlSec -> DEVUTIL_PROXY_OCI_TAG_TTL_SEC).

export const ecosystemFields = {};
