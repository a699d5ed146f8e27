// The Diagrams (PlantUML server) section of the home page: examples built from the configured public URLs.
import { copyField, example, html } from '../../page/html.ts';
import type { PageSection } from '../../page/section.ts';
import { encodeDiagram } from './encoding.ts';

const SAMPLE_DIAGRAM = '@startuml\nAlice -> Bob : hello\nBob --> Alice : hi!\n@enduml\n';

export const plantumlPage: PageSection = {
  nav: 'Diagrams',
  title: 'Diagrams',
  lead: 'A PlantUML server: editors, Markdown renderers and docs tools that ask for a “PlantUML server URL” work when pointed here.',
  body(p) {
    const u = p.urls.plantuml;
    const enc = encodeDiagram(SAMPLE_DIAGRAM);
    return html`<div class="split"><div class="examples">
${example('PlantUML server URL for editors and plugins', u)}
${example('Render an encoded diagram', `curl -f -o diagram.svg ${u}/svg/${enc}`)}
${example('Render a file', `curl -f --data-binary @diagram.puml -o diagram.png ${u}/png`)}
</div>
<form class="tool" id="uml-form">
<div class="field"><label for="uml-src">Diagram source</label><textarea id="uml-src" rows="8" spellcheck="false" class="mono">${SAMPLE_DIAGRAM}</textarea></div>
<div class="field inline"><label for="uml-fmt">Format</label><select id="uml-fmt"><option>svg</option><option>png</option><option>txt</option></select></div>
<figure class="preview uml" aria-live="polite"><img id="uml-img" src="/plantuml/svg/${enc}" alt="Diagram preview"><pre id="uml-txt" hidden></pre></figure>
${copyField('uml-url', 'Encoded URL', `${u}/svg/${enc}`)}
<p class="status" id="uml-status" role="status"></p>
</form></div>`;
  },
};
