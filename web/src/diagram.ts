// Diagram editor for every language the server renders: the language list and samples come with the
// page (the server's registry), /plantuml/health says which render here. The text is encoded in the
// browser (the server's own text-encoder.ts) and previewed from this server's /plantuml mount,
// debounced so typing does not queue a render per key. PlantUML languages preview through
// plantuml-server's API (its error image and error-line header); the others through Kroki's, whose
// JSON error carries the engine's message and line.
import { encodeKroki, encodePlantUml } from '../../src/services/diagrams/text-encoder.ts';
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

/**
 * Past this many characters of encoded source the preview POSTs the text instead: a request line
 * longer than ~8 KB is refused by common proxies (nginx's default header buffers) and past 16 KB by
 * Node itself. The copyable links stay GET URLs (what a Markdown page embeds).
 */
export const GET_MAX = 6000;

/** The preview's request: Kroki-style GET of the encoded text, or a POST of the text when too long. */
export function previewRequest(
  getPath: string,
  postPath: string,
  text: string,
  headers: Record<string, string>,
): [string, RequestInit] {
  if (getPath.length <= GET_MAX) return [getPath, { headers }];
  return [
    postPath,
    { method: 'POST', headers: { ...headers, 'content-type': 'text/plain; charset=utf-8' }, body: text },
  ];
}

interface Lang {
  type: string;
  kind: string;
  engine: string;
  formats: string[];
  sample: string;
}

interface Health {
  languages?: { type?: unknown; available?: unknown; reason?: unknown }[];
}

/** The text plantuml-server's API gets: ditaa in its own block, as the Kroki route does. */
function plantumlText(lang: Lang, text: string): string {
  if (lang.engine === 'ditaa' && !text.trimStart().startsWith('@start'))
    return `@startditaa\n${text}\n@endditaa`;
  return text;
}

/** The message of a Kroki error answer (JSON by our Accept, else its text), one line. */
async function krokiError(r: Response): Promise<string> {
  const text = await r.text();
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === 'string') return m.slice(0, 500);
  } catch {
    // not JSON: a proxy's or the rate limiter's text
  }
  return text.trim().slice(0, 200) || r.statusText;
}

export function initDiagram(cfg: PageConfig): void {
  const typeSel = byId<HTMLSelectElement>('uml-type');
  const src = byId<HTMLTextAreaElement>('uml-src');
  const fmt = byId<HTMLSelectElement>('uml-fmt');
  const img = byId<HTMLImageElement>('uml-img');
  const txt = byId('uml-txt');
  const url = byId<HTMLInputElement>('uml-url');
  const urlField = byId('uml-url-field');
  const kroki = byId<HTMLInputElement>('uml-kroki');
  if (!typeSel || !src || !fmt || !img || !txt || !url || !urlField || !kroki) return;
  const figure = img.closest('figure');
  const langs = new Map<string, Lang>();
  for (const o of Array.from(typeSel.options)) {
    const d = o.dataset;
    langs.set(o.value, {
      type: o.value,
      kind: d['kind'] ?? 'thread',
      engine: d['engine'] ?? o.value,
      formats: (d['formats'] ?? 'svg').split(' ').filter(Boolean),
      sample: d['sample'] ?? '',
    });
  }
  /** What the visitor typed per language, so switching back and forth keeps it. */
  const texts = new Map<string, string>();
  let current = typeSel.value;
  let seq = 0;
  let shown = '';

  const lang = () => langs.get(typeSel.value) ?? langs.values().next().value!;

  /** The format the visitor picked: kept across languages that offer it. */
  let wanted = fmt.value;
  const setFormats = (l: Lang) => {
    fmt.replaceChildren(
      ...l.formats.map((f) => {
        const o = document.createElement('option');
        o.textContent = f;
        return o;
      }),
    );
    fmt.value = l.formats.includes(wanted) ? wanted : (l.formats[0] ?? 'svg');
  };

  const show = async (r: Response, l: Lang, format: string, mine: number): Promise<boolean> => {
    if (format === 'txt') {
      const body = await r.text();
      if (mine !== seq) return false;
      img.hidden = true;
      txt.hidden = false;
      txt.textContent = body;
    } else {
      const blob = await r.blob();
      if (mine !== seq) return false;
      if (shown) URL.revokeObjectURL(shown);
      shown = URL.createObjectURL(blob);
      txt.hidden = true;
      img.hidden = false;
      img.src = shown;
    }
    figure?.classList.remove('stale');
    // Which diagram the preview holds (the browser test waits for it).
    (format === 'txt' ? txt : img).dataset['shown'] = `${l.type}/${format}`;
    return true;
  };

  const render = async () => {
    const mine = ++seq;
    const l = lang();
    const format = fmt.value;
    const text = src.value;
    if (!text.trim()) return setStatus('uml-status', 'Type a diagram to see it here.');
    const kenc = await encodeKroki(text);
    const penc = l.kind === 'plantuml' ? await encodePlantUml(plantumlText(l, text)) : '';
    if (mine !== seq) return; // a newer edit already started
    kroki.value = `${cfg.diagrams}/${l.type}/${format}/${kenc}`;
    urlField.hidden = l.kind !== 'plantuml';
    url.value = penc ? `${cfg.diagrams}/${format}/${penc}` : '';
    setStatus('uml-status', 'Rendering…');
    try {
      if (l.kind === 'plantuml') {
        // plantuml-server's API: a syntax error is a 400 *with* an error image, and only the
        // response headers say what and where the error is.
        const r = await fetch(
          ...previewRequest(`/plantuml/${format}/${penc}`, `/plantuml/${format}`, plantumlText(l, text), {}),
        );
        if (mine !== seq) return;
        const error = r.headers.get('x-plantuml-diagram-error');
        const line = r.headers.get('x-plantuml-diagram-error-line');
        if (!r.ok && !error) {
          // Not a diagram error (no Java, queue full, rate limit): the body is a one-line reason.
          const reason = (await r.text()).trim().slice(0, 200);
          return setStatus('uml-status', `Could not render (${r.status}): ${reason}`, 'error');
        }
        if (!(await show(r, l, format, mine))) return;
        // Several errors come as one comma-joined value: the first line number is shown.
        const first = Number.parseInt(line ?? '', 10);
        const where = Number.isNaN(first) ? '' : ` (line ${editorLine(text, first)})`;
        if (error) setStatus('uml-status', `${error}${where}`, 'error');
        else setStatus('uml-status', 'Rendered.', 'ok');
        return;
      }
      // Kroki's API; errors in JSON: {"error":{"code","message"}}, the message naming the line.
      const r = await fetch(
        ...previewRequest(`/plantuml/${l.type}/${format}/${kenc}`, `/plantuml/${l.type}/${format}`, text, {
          accept: 'application/json',
        }),
      );
      if (mine !== seq) return;
      if (!r.ok) {
        const message = await krokiError(r);
        if (mine !== seq) return;
        figure?.classList.add('stale');
        const what = r.status === 400 ? message : `Could not render (${r.status}): ${message}`;
        return setStatus('uml-status', what, 'error');
      }
      if (await show(r, l, format, mine)) setStatus('uml-status', 'Rendered.', 'ok');
    } catch (err) {
      if (mine === seq) setStatus('uml-status', `Could not render: ${(err as Error).message}`, 'error');
    }
  };

  const switchTo = (type: string) => {
    texts.set(current, src.value);
    current = type;
    typeSel.value = type;
    const l = lang();
    src.value = texts.get(type) ?? l.sample;
    setFormats(l);
    void render();
  };

  void fetch('/plantuml/health', { headers: { accept: 'application/json' } })
    .then((r) => (r.ok ? (r.json() as Promise<Health>) : null))
    .then((h) => {
      const list = byId('uml-unavailable-list');
      const off: string[] = [];
      for (const entry of h?.languages ?? []) {
        if (typeof entry.type !== 'string' || entry.available !== false) continue;
        const o = Array.from(typeSel.options).find((x) => x.value === entry.type);
        const reason = typeof entry.reason === 'string' ? entry.reason : 'not available';
        if (o) {
          o.disabled = true;
          o.textContent = `${o.textContent} (unavailable)`;
          o.title = reason;
        }
        const li = document.createElement('li');
        const name = document.createElement('code');
        name.textContent = entry.type;
        li.append(name, `: ${reason}`);
        list?.append(li);
        off.push(entry.type);
      }
      const details = byId('uml-unavailable');
      if (details && off.length) details.hidden = false;
      // The language shown first cannot render here (no Java): start on one that can.
      if (typeSel.selectedOptions[0]?.disabled) {
        const first = Array.from(typeSel.options).find((o) => !o.disabled);
        if (first) switchTo(first.value);
      }
    })
    .catch(() => {
      // /health unreachable: every language stays offered; a render says what is wrong.
    });

  img.addEventListener('load', () => {
    img.dataset['rendered'] = String(Number(img.dataset['rendered'] ?? '0') + 1);
  });
  setFormats(lang());
  typeSel.addEventListener('change', () => switchTo(typeSel.value));
  src.addEventListener('input', debounce(render, 500));
  fmt.addEventListener('change', () => {
    wanted = fmt.value;
    void render();
  });
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
