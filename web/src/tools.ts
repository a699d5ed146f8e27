// The small tools: random image preview controls, proxy URL converter.
import { byId, debounce, type PageConfig, setStatus } from './dom.ts';
import { convert } from './proxy-convert.ts';

export function initImage(cfg: PageConfig): void {
  const form = byId<HTMLFormElement>('image-form');
  const img = byId<HTMLImageElement>('image-preview');
  const url = byId<HTMLInputElement>('image-url');
  if (!form || !img || !url) return;
  const val = (id: string) => byId<HTMLInputElement>(id)?.value.trim() ?? '';
  const update = () => {
    const q = new URLSearchParams();
    for (const k of ['width', 'height', 'id']) if (val(`image-${k}`)) q.set(k, val(`image-${k}`));
    const category = byId<HTMLSelectElement>('image-category')?.value;
    if (category) q.set('category', category);
    if (byId<HTMLInputElement>('image-gray')?.checked) q.set('grayscale', '1');
    const blur = val('image-blur');
    const out = byId('image-blur-out');
    if (out) out.textContent = blur;
    if (blur && blur !== '0') q.set('blur', blur);
    const fmt = byId<HTMLSelectElement>('image-format')?.value ?? 'webp';
    if (fmt !== 'webp') q.set('format', fmt);
    const path = `/rest/api/v1/image?${q}`;
    url.value = `${cfg.base}${path}`;
    setStatus('image-status', 'Loading…');
    img.src = path;
  };
  img.addEventListener('load', () =>
    setStatus('image-status', `${img.naturalWidth}×${img.naturalHeight}`, 'ok'),
  );
  img.addEventListener('error', async () => {
    // The <img> cannot show the JSON error: ask again to tell the user why.
    const r = await fetch(img.src).catch(() => null);
    const body = r ? ((await r.json().catch(() => ({}))) as { message?: string }) : {};
    setStatus('image-status', body.message ?? 'The image could not be loaded.', 'error');
  });
  loadCategories(byId<HTMLSelectElement>('image-category'));
  form.addEventListener('input', debounce(update, 400));
  form.addEventListener('change', (e) => {
    if ((e.target as Element | null)?.id === 'image-category') update();
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  byId('image-shuffle')?.addEventListener('click', () => {
    const id = byId<HTMLInputElement>('image-id');
    if (id) id.value = Math.random().toString(36).slice(2, 10);
    update();
  });
}

/** The categories (subfolders of the image directory) from the catalogue; none leaves "Any" alone. */
function loadCategories(select: HTMLSelectElement | null): void {
  if (!select) return;
  fetch('/rest/api/v1/image/list?limit=1')
    .then((r) => (r.ok ? r.json() : null))
    .then((body: { data?: { categories?: { name: string; total: number }[] } } | null) => {
      const cats = body?.data?.categories ?? [];
      for (const c of cats) select.append(new Option(`${c.name} (${c.total})`, c.name));
      select.disabled = cats.length === 0;
    })
    .catch(() => {});
}

export function initProxy(cfg: PageConfig): void {
  const input = byId<HTMLInputElement>('proxy-in');
  const out = byId<HTMLInputElement>('proxy-out');
  const box = byId('proxy-snippet-box');
  if (!input || !out || !box) return;
  const run = () => {
    if (!input.value.trim()) {
      out.value = '';
      box.hidden = true;
      setStatus('proxy-status', '');
      return;
    }
    const r = convert(input.value, cfg.proxy, cfg.allow);
    if (!r.ok) {
      out.value = '';
      box.hidden = true;
      setStatus('proxy-status', r.error, 'error');
      return;
    }
    out.value = r.value.url;
    const label = byId('proxy-snippet-label');
    const code = byId('proxy-snippet');
    if (label) label.textContent = r.value.label;
    if (code) code.textContent = r.value.snippet;
    box.hidden = false;
    setStatus('proxy-status', '');
  };
  input.addEventListener('input', debounce(run, 150));
  byId('proxy-form')?.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
}
