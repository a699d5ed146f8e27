// The Maven profile: Maven Central for Maven (a mirror in ~/.m2/settings.xml) and Gradle (a
// repository in settings.gradle: Gradle has no mirror setting of its own).
import { ENVELOPES } from '../../../../infra/http/envelopes.ts';
import { defineEcosystem, type SetupInput } from '../define.ts';

const repository = (p: SetupInput): string => `${p.proxy}/maven/`;

/** The <mirror> for ~/.m2/settings.xml (inside <settings><mirrors>). */
export const mavenMirror = (url: string): string =>
  `<mirror>\n  <id>devutil</id>\n  <mirrorOf>central</mirrorOf>\n  <url>${url}</url>\n</mirror>`;

/**
 * settings.gradle or settings.gradle.kts (the same text in both): every project's dependencies from
 * this repository, in place of mavenCentral().
 */
export const gradleRepositories = (url: string): string =>
  `dependencyResolutionManagement {\n  repositories {\n    maven { url = uri("${url}") }\n  }\n}`;

export const mavenEcosystem = defineEcosystem({
  name: 'maven',
  title: 'Maven Central',
  summary:
    'Maven and Gradle fetch artifacts through this server: release files are cached as immutable, maven-metadata.xml is revalidated, checksums pass through untouched. The upstream repository is DEVUTIL_PROXY_MAVEN_REPOSITORY.',
  paths: ['/maven'],
  // Maven and Gradle report the status line; the text says why.
  envelope: ENVELOPES.text,
  load: () => import('./index.ts'),
  setup: (p) => {
    const r = repository(p);
    return [
      { label: 'Maven (~/.m2/settings.xml, inside <mirrors>)', text: mavenMirror(r) },
      { label: 'Gradle (settings.gradle or settings.gradle.kts)', text: gradleRepositories(r) },
    ];
  },
  script: { tool: 'maven', url: repository },
});
