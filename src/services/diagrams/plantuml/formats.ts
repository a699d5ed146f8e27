// The URL format words and what each one asks of the engine and sends back
// (docs/protocols/plantuml-server.md §2).

export interface FormatSpec {
  /** What the worker is asked for. */
  engine: string;
  op: 'render' | 'map' | 'check';
  contentType: string;
  dark: boolean;
  /** /base64 wraps a PNG in a data: URL. */
  base64?: boolean;
}

const TEXT = 'text/plain;charset=UTF-8';

const BASE: Record<string, Omit<FormatSpec, 'dark'>> = {
  png: { engine: 'png', op: 'render', contentType: 'image/png' },
  img: { engine: 'png', op: 'render', contentType: 'image/png' },
  svg: { engine: 'svg', op: 'render', contentType: 'image/svg+xml' },
  txt: { engine: 'txt', op: 'render', contentType: TEXT },
  utxt: { engine: 'txt', op: 'render', contentType: TEXT },
  eps: { engine: 'eps', op: 'render', contentType: 'application/postscript' },
  epstext: { engine: 'epstext', op: 'render', contentType: 'application/postscript' },
  pdf: { engine: 'pdf', op: 'render', contentType: 'application/pdf' },
  // [quirk] the server's content type for /base64, kept because clients see it.
  base64: { engine: 'png', op: 'render', contentType: 'text/plain; charset=x-user-defined', base64: true },
  map: { engine: 'png', op: 'map', contentType: TEXT },
  check: { engine: 'png', op: 'check', contentType: TEXT },
};

/** Dark variants exist for the image formats: /dpng, /dsvg, /dimg, /dtxt (server PR #425). */
const DARKABLE = new Set(['png', 'img', 'svg', 'txt', 'utxt', 'base64', 'eps']);

/**
 * Resolves a format word; `colorMapper` is the X-Preferred-Color-Mapper header, which wins over
 * the path prefix. Kroki's `txt` is plain ASCII where the server's is Unicode.
 */
export function formatOf(word: string, colorMapper?: string, kroki = false): FormatSpec | null {
  let dark = false;
  let w = word.toLowerCase();
  // Own keys only: a format word is request input, and `constructor` or `__proto__` must be unknown.
  if (!Object.hasOwn(BASE, w) && w.startsWith('d') && DARKABLE.has(w.slice(1))) {
    dark = true;
    w = w.slice(1);
  }
  const base = Object.hasOwn(BASE, w) ? BASE[w] : undefined;
  if (!base) return null;
  const mapper = colorMapper?.trim().toLowerCase();
  if (mapper === 'dark' || mapper === 'dark_mode') dark = DARKABLE.has(w);
  else if (mapper === 'light' || mapper === 'identity' || mapper === 'default') dark = false;
  if (kroki && w === 'txt') return { ...base, engine: 'atxt', dark };
  return { ...base, dark };
}

/** Kroki's POST /plantuml takes the format from Accept. */
export function formatFromAccept(accept: string | undefined): string {
  const a = accept ?? '';
  if (a.includes('image/png')) return 'png';
  if (a.includes('application/pdf')) return 'pdf';
  if (a.includes('text/plain')) return 'txt';
  return 'svg';
}
