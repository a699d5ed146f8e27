// The Diagrams section of the home page: examples built from the configured public URLs and the
// editor for every language of the registry (kroki/languages.ts), each with its sample. The script
// (web/src/diagram.ts) asks /health which languages render here and previews as you type.
import { copyField, example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';
import { LANGUAGES, type Language } from './kroki/languages.ts';
import { encodeDiagram, encodeKrokiDiagram } from './plantuml/encoding.ts';

/** Formats the editor can show in place: images, and PlantUML's ASCII art. */
const PREVIEWABLE = new Set(['svg', 'png', 'jpeg', 'txt']);

/** The sample as the editor shows it: PlantUML text in its @startuml block, the others as they are. */
export function editorSample(l: Language): string {
  return l.kind === 'plantuml' && l.engine === 'uml' ? `@startuml\n${l.sample}\n@enduml\n` : l.sample;
}

const FIRST = LANGUAGES[0]!;
const SAMPLE_DIAGRAM = editorSample(FIRST);

export const diagramsPage: PageSection = {
  nav: 'Diagrams',
  title: 'Diagrams',
  lead: 'A Kroki and PlantUML server: PlantUML, Graphviz, Mermaid, D2, Vega and every other language below, for the editors, Markdown renderers and docs tools that ask for a “Kroki server” or a “PlantUML server URL”.',
  body(p) {
    const u = p.urls.diagrams;
    const enc = encodeDiagram(SAMPLE_DIAGRAM);
    const kroki = encodeKrokiDiagram(SAMPLE_DIAGRAM);
    const options = LANGUAGES.map(
      (l) =>
        html`<option value="${l.type}" data-kind="${l.kind}" data-engine="${l.engine}" data-formats="${l.formats.filter((f) => PREVIEWABLE.has(f)).join(' ')}" data-sample="${editorSample(l)}">${l.name}</option>`,
    );
    return html`<div class="split"><div class="examples">
${example('Kroki and PlantUML server URL for editors and plugins', u)}
${example('Render a diagram (Kroki: type, format, source)', `printf 'digraph { a -> b }' | curl -f --data-binary @- -o graph.svg ${u}/graphviz/svg`)}
${example('Render an encoded PlantUML diagram', `curl -f -o diagram.svg ${u}/svg/${enc}`)}
${example('Languages available here', `curl -f ${u}/health`)}
</div>
<form class="tool" id="uml-form">
<div class="field inline"><label for="uml-type">Language</label><select id="uml-type">${options}</select></div>
<div class="field"><label for="uml-src">Diagram source</label><textarea id="uml-src" rows="8" spellcheck="false" class="mono">${SAMPLE_DIAGRAM}</textarea></div>
<div class="field inline"><label for="uml-fmt">Format</label><select id="uml-fmt"><option>svg</option><option>png</option><option>txt</option></select></div>
<figure class="preview uml" aria-live="polite"><img id="uml-img" src="/plantuml/svg/${enc}" alt="Diagram preview"><pre id="uml-txt" hidden></pre></figure>
<p class="status" id="uml-status" role="status"></p>
${copyField('uml-kroki', 'Kroki URL', `${u}/${FIRST.type}/svg/${kroki}`)}
<div id="uml-url-field">${copyField('uml-url', 'PlantUML server URL', `${u}/svg/${enc}`)}</div>
<details id="uml-unavailable" hidden><summary>Not available on this server</summary><ul id="uml-unavailable-list"></ul></details>
</form></div>`;
  },
};
