// C4-PlantUML includes in the forms people paste, answered from the C4 library inside PlantUML's
// standard library (`!include <C4/C4_Context>`) without any network: Kroki's bare names
// (`!include C4_Context.puml`, which Kroki serves from its bundled copy) and the library's GitHub
// URLs (`!include`/`!includeurl` of raw.githubusercontent.com or github.com/.../raw/, any branch or
// tag, the original RicardoNiepel repository too). The bundled library is the one the jar ships;
// a pinned tag in a URL gets that version, not the tag's.

/** The library's files, by lower-case name. */
const FILES = new Map(
  ['C4', 'C4_Context', 'C4_Container', 'C4_Component', 'C4_Deployment', 'C4_Dynamic', 'C4_Sequence'].map(
    (f) => [f.toLowerCase(), f],
  ),
);

/** The C4-PlantUML repositories whose raw files people include. */
const REPO = String.raw`(?:plantuml-stdlib|RicardoNiepel)/C4-PlantUML`;
const URL_FORMS = [
  new RegExp(String.raw`^https?://raw\.githubusercontent\.com/${REPO}/(?:[^\s?#]+/)?(\w+)\.puml$`, 'i'),
  new RegExp(String.raw`^https?://github\.com/${REPO}/raw/(?:[^\s?#]+/)?(\w+)\.puml$`, 'i'),
];
/** A bare or relative name, as Kroki's C4 samples write it. */
const BARE = /^(?:\.\/)?(\w+)\.puml$/i;
const INCLUDE = /^([ \t]*)!include(?:url)?[ \t]+("?)([^"\s]+)\2[ \t]*$/gim;

/** The stdlib file an include target names, or null when it is not one of C4-PlantUML's. */
function c4File(target: string): string | null {
  const m = BARE.exec(target) ?? URL_FORMS.map((r) => r.exec(target)).find(Boolean);
  return m ? (FILES.get(m[1]!.toLowerCase()) ?? null) : null;
}

/** The source with every C4-PlantUML include line turned into its standard-library include. */
export function c4Includes(source: string): string {
  if (!/c4/i.test(source)) return source;
  return source.replace(INCLUDE, (line, indent: string, _q: string, target: string) => {
    const file = c4File(target);
    return file ? `${indent}!include <C4/${file}>` : line;
  });
}
