// GET /health in Kroki's shape ({"status":"pass","version":{...}}, application/health+json), plus
// what Kroki does not say: every language with its formats, whether it renders here and, if not,
// why (an optional package or system program missing, no Java for PlantUML).
import type { ServiceContext } from '../../../context.ts';
import type { PlantumlEngine } from '../plantuml/engine.ts';
import { LANGUAGES, NOT_SERVED } from './languages.ts';
import type { Availability, DiagramRenderer } from './renderer.ts';

interface LanguageHealth extends Availability {
  type: string;
  formats: readonly string[];
}

async function plantumlAvailability(engine: PlantumlEngine): Promise<Availability> {
  const info = await engine.java();
  if (!info.ok) return { available: false, reason: info.reason ?? 'needs Java 17+' };
  if (!info.javac) return { available: false, reason: 'needs a Java 17+ JDK (javac not found, only a JRE)' };
  if (engine.prepareError) return { available: false, reason: engine.prepareError };
  return { available: true, version: engine.facts?.version ?? `java ${info.version}` };
}

export async function health(ctx: ServiceContext, engine: PlantumlEngine, renderer: DiagramRenderer) {
  const puml = await plantumlAvailability(engine);
  await Promise.all(LANGUAGES.map((l) => renderer.detect(l)));
  const languages: LanguageHealth[] = LANGUAGES.map((l) => ({
    type: l.type,
    formats: l.formats,
    ...(l.kind === 'plantuml' ? puml : renderer.availability(l)),
  }));
  for (const [type, reason] of Object.entries(NOT_SERVED))
    languages.push({ type, formats: [], available: false, reason });
  const version: Record<string, unknown> = { devutil: { number: ctx.version } };
  for (const l of languages) if (l.available && l.version) version[l.type] = l.version;
  return {
    status: languages.some((l) => l.available) ? 'pass' : 'warn',
    version,
    languages,
  };
}
