// PlantUML live editor: encodes the text in the browser (with the server's own text-encoder.ts), then
// previews it from this server's /plantuml mount, debounced so typing does not queue a render per key.
import { encodePlantUml } from '../../src/services/plantuml/text-encoder.ts';
import { byId, debounce, type PageConfig, setStatus } from './dom.ts';

/**
 * The editor's 1-based line for the engine's error line. X-PlantUML-Diagram-Error-Line counts from
 * 0 at the @startuml line (plantuml-server's convention), while the engine's own error image and a
 * person count from 1; text without @start is wrapped by the server, whose added @startuml is line 0.
 */
export function editorLine(text: string, engineLine: number): number {
  const t = text.replace(/\r\n?/g, '\n');
  const body = t.trimStart();
  if (!body.startsWith('@start')) return engineLine;
  const linesBefore = t.slice(0, t.length - body.length).split('\n').length - 1;
  return linesBefore + engineLine + 1;
}

export function initDiagram(cfg: PageConfig): void {
  const src = byId<HTMLTextAreaElement>('uml-src');
  const fmt = byId<HTMLSelectElement>('uml-fmt');
  const img = byId<HTMLImageElement>('uml-img');
  const txt = byId('uml-txt');
  const url = byId<HTMLInputElement>('uml-url');
  if (!src || !fmt || !img || !txt || !url) return;
  let seq = 0;
  let shown = '';

  const render = async () => {
    const mine = ++seq;
    const format = fmt.value;
    const text = src.value;
    if (!text.trim()) return setStatus('uml-status', 'Type a diagram to see it here.');
    const enc = await encodePlantUml(text);
    if (mine !== seq) return; // a newer edit already started
    url.value = `${cfg.plantuml}/${format}/${enc}`;
    url.dataset['encoded'] = enc;
    const path = `/plantuml/${format}/${enc}`;
    setStatus('uml-status', 'Rendering…');
    try {
      // fetch rather than <img src>: a syntax error is a 400 *with* an error image, and only the
      // response headers say what and where the error is.
      const r = await fetch(path);
      if (mine !== seq) return;
      const error = r.headers.get('x-plantuml-diagram-error');
      const line = r.headers.get('x-plantuml-diagram-error-line');
      if (!r.ok && !error) {
        // Not a diagram error (no Java, queue full, rate limit): the body is a one-line reason.
        const reason = (await r.text()).trim().slice(0, 200);
        return setStatus('uml-status', `Could not render (${r.status}): ${reason}`, 'error');
      }
      if (format === 'txt') {
        img.hidden = true;
        txt.hidden = false;
        txt.textContent = await r.text();
      } else {
        const blob = await r.blob();
        if (mine !== seq) return;
        if (shown) URL.revokeObjectURL(shown);
        shown = URL.createObjectURL(blob);
        txt.hidden = true;
        img.hidden = false;
        img.src = shown;
      }
      // Several errors come as one comma-joined value: the first line number is shown.
      const first = Number.parseInt(line ?? '', 10);
      const where = Number.isNaN(first) ? '' : ` (line ${editorLine(text, first)})`;
      if (error) setStatus('uml-status', `${error}${where}`, 'error');
      else setStatus('uml-status', 'Rendered.', 'ok');
    } catch (err) {
      setStatus('uml-status', `Could not render: ${(err as Error).message}`, 'error');
    }
  };

  img.addEventListener('load', () => {
    img.dataset['rendered'] = String(Number(img.dataset['rendered'] ?? '0') + 1);
  });
  src.addEventListener('input', debounce(render, 500));
  fmt.addEventListener('change', () => void render());
  src.addEventListener('keydown', (e) => {
    // Tab indents instead of leaving the editor; Escape then Tab still moves focus on.
    if (e.key !== 'Tab' || e.shiftKey || src.dataset['escaped'] === '1') return;
    e.preventDefault();
    src.setRangeText('  ', src.selectionStart, src.selectionEnd, 'end');
    src.dispatchEvent(new Event('input'));
  });
  src.addEventListener('keyup', (e) => {
    src.dataset['escaped'] = e.key === 'Escape' ? '1' : '0';
  });
  byId('uml-form')?.addEventListener('submit', (e) => {
    e.preventDefault();
    void render();
  });
}
