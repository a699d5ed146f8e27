// Small DOM helpers shared by the page's tools: element lookup, debounce, copy buttons, status lines.

export function byId<T extends HTMLElement = HTMLElement>(id: string): T | null {
  return document.getElementById(id) as T | null;
}

export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): (...a: A) => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  return (...a: A) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), ms);
  };
}

export function setStatus(id: string, text: string, kind: 'ok' | 'error' | 'info' = 'info'): void {
  const el = byId(id);
  if (!el) return;
  el.textContent = text;
  el.dataset['kind'] = kind;
}

export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

async function copyText(text: string, fallbackFrom?: HTMLInputElement): Promise<boolean> {
  try {
    // Only in secure contexts (https, localhost); plain-http deployments use the fallback.
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection fallback
  }
  const el = fallbackFrom ?? document.createElement('textarea');
  if (!fallbackFrom) {
    el.value = text;
    el.setAttribute('readonly', '');
    el.className = 'offscreen';
    document.body.append(el);
  }
  el.select();
  const ok = document.execCommand('copy');
  if (!fallbackFrom) el.remove();
  return ok;
}

function flash(button: HTMLButtonElement, ok: boolean): void {
  const old = button.dataset['label'] ?? button.textContent ?? 'Copy';
  button.dataset['label'] = old;
  button.textContent = ok ? 'Copied' : 'Press Ctrl+C';
  setTimeout(() => {
    button.textContent = old;
  }, 1500);
}

/** Reveals the copy buttons (they need JavaScript) and wires them with one delegated listener. */
export function setupCopy(): void {
  for (const b of Array.from(document.querySelectorAll<HTMLButtonElement>('button.copy'))) b.hidden = false;
  document.addEventListener('click', (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest('button.copy') : null;
    if (!(target instanceof HTMLButtonElement)) return;
    const fromId = target.dataset['copyFrom'];
    if (fromId) {
      const input = byId<HTMLInputElement>(fromId);
      if (input) void copyText(input.value, input).then((ok) => flash(target, ok));
      return;
    }
    const code = target.closest('.example')?.querySelector('code');
    if (code) void copyText(code.textContent ?? '').then((ok) => flash(target, ok));
  });
}

/** Buttons that only work with JavaScript are rendered disabled; enable them once the script runs. */
export function enableJsControls(): void {
  for (const b of Array.from(document.querySelectorAll<HTMLButtonElement>('[data-needs-js]')))
    b.disabled = false;
  document.documentElement.classList.add('js');
}

/** The public URLs the server injected (data-* on <body>), never derived from location. */
export interface PageConfig {
  base: string;
  proxy: string;
  diagrams: string;
  avatar: string;
  allow: string[];
}

export function pageConfig(): PageConfig {
  const d = document.body.dataset;
  return {
    base: d['base'] ?? location.origin,
    proxy: d['proxy'] ?? `${location.origin}/proxy`,
    diagrams: d['diagrams'] ?? `${location.origin}/plantuml`,
    avatar: d['avatar'] ?? location.origin,
    allow: (d['allow'] ?? '').split(',').filter(Boolean),
  };
}
