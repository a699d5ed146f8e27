// Maven mount settings (DEVUTIL_PROXY_MAVEN_*).
import { httpsUrl } from '../fields.ts';

export const mavenFields = {
  mavenRepository: httpsUrl(
    'https://repo.maven.apache.org/maven2',
    'upstream repository of the maven mount (Maven Central; a mirror of it works too)',
  ),
};
