// The one list of ecosystem profiles the proxy can serve (DEVUTIL_PROXY_ECOSYSTEMS picks among
// them; none by default, so the proxy is the seed's host-path form alone). Adding one is its
// folder ecosystems/<name>/ (definition.ts, config.ts when it has settings) and a line here and in
// ecosystems/config.ts. Definitions load no ecosystem code: their plugins load when enabled.
import type { EcosystemDef } from './define.ts';
import { goEcosystem } from './go/definition.ts';
import { hfEcosystem } from './hf/definition.ts';
import { mavenEcosystem } from './maven/definition.ts';
import { npmEcosystem } from './npm/definition.ts';
import { ociEcosystem } from './oci/definition.ts';

export const ECOSYSTEMS: readonly EcosystemDef[] = [
  ociEcosystem,
  hfEcosystem,
  npmEcosystem,
  goEcosystem,
  mavenEcosystem,
];
