// File storage tool: pick or drop a file, choose a key, upload with XMLHttpRequest so the upload's
// progress events can drive the progress bar (fetch has no upload progress).
import { byId, type PageConfig, pretty, setStatus } from './dom.ts';

const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** A valid key suggested from a file name: unsupported characters become '-'. */
export function keyFromName(name: string): string {
  const k = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^\.+/, '')
    .slice(0, 128);
  return k || 'file';
}

export function initUpload(cfg: PageConfig): void {
  const form = byId<HTMLFormElement>('upload-form');
  const input = byId<HTMLInputElement>('upload-file');
  const keyInput = byId<HTMLInputElement>('upload-key');
  const drop = byId('drop');
  const bar = byId<HTMLProgressElement>('upload-progress');
  const pct = byId('upload-pct');
  const cancel = byId<HTMLButtonElement>('upload-cancel');
  const go = byId<HTMLButtonElement>('upload-go');
  if (!form || !input || !keyInput || !drop || !bar || !pct || !cancel || !go) return;
  let xhr: XMLHttpRequest | null = null;

  const picked = () => {
    const f = input.files?.[0];
    const text = byId('drop-text');
    if (text)
      text.textContent = f
        ? `${f.name} (${f.size.toLocaleString()} bytes)`
        : 'Drop a file here or choose one';
    if (f && !keyInput.value) keyInput.value = keyFromName(f.name);
  };
  input.addEventListener('change', picked);
  for (const ev of ['dragenter', 'dragover'])
    drop.addEventListener(ev, (e) => {
      e.preventDefault();
      drop.classList.add('over');
    });
  for (const ev of ['dragleave', 'drop']) drop.addEventListener(ev, () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    if (e.dataTransfer?.files.length) {
      input.files = e.dataTransfer.files;
      picked();
    }
  });
  cancel.addEventListener('click', () => xhr?.abort());

  const setProgress = (p: number) => {
    bar.value = p;
    pct.textContent = `${p}%`;
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const file = input.files?.[0];
    const key = keyInput.value.trim();
    if (!file) return setStatus('upload-status', 'Choose a file first.', 'error');
    if (!KEY.test(key))
      return setStatus(
        'upload-status',
        'The key must be 1–128 of A–Z a–z 0–9 . _ - and not start with a dot.',
        'error',
      );
    const body = new FormData();
    body.append('file', file, file.name);
    const req = new XMLHttpRequest();
    xhr = req;
    let events = 0;
    req.open('POST', `/api/file/${encodeURIComponent(key)}`);
    const token = byId<HTMLInputElement>('upload-token')?.value.trim();
    if (token) req.setRequestHeader('X-Owner-Token', token);
    req.upload.addEventListener('progress', (ev) => {
      events++;
      bar.dataset['events'] = String(events);
      if (ev.lengthComputable) setProgress(Math.floor((ev.loaded / ev.total) * 100));
    });
    req.upload.addEventListener('load', () => setStatus('upload-status', 'Sent; the server is storing it…'));
    req.addEventListener('loadend', () => {
      xhr = null;
      go.disabled = false;
      cancel.hidden = true;
    });
    req.addEventListener('abort', () => setStatus('upload-status', 'Upload cancelled.', 'error'));
    req.addEventListener('error', () =>
      setStatus('upload-status', 'The upload failed (network error).', 'error'),
    );
    req.addEventListener('load', () => showResult(req, key, cfg));
    setProgress(0);
    byId('upload-result')?.setAttribute('hidden', '');
    setStatus('upload-status', `Uploading ${file.name}…`);
    go.disabled = true;
    cancel.hidden = false;
    req.send(body);
  });
}

function showResult(req: XMLHttpRequest, key: string, cfg: PageConfig): void {
  let body: unknown = req.responseText;
  try {
    body = JSON.parse(req.responseText);
  } catch {
    // not JSON: show the text as is
  }
  const msg = typeof body === 'object' && body && 'message' in body ? String(body.message) : '';
  if (req.status !== 200) {
    if (req.status === 409) byId('upload-token-field')?.removeAttribute('hidden');
    setStatus('upload-status', `Upload refused (${req.status}): ${msg || req.statusText}`, 'error');
    return;
  }
  const bar = byId<HTMLProgressElement>('upload-progress');
  if (bar) bar.value = 100;
  const pct = byId('upload-pct');
  if (pct) pct.textContent = '100%';
  setStatus('upload-status', `Stored under “${key}”.`, 'ok');
  const owner = req.getResponseHeader('X-Owner-Token');
  const ownerInput = byId<HTMLInputElement>('upload-owner');
  if (ownerInput) {
    ownerInput.value = owner ?? '(unchanged: this upload replaced a file you own)';
    ownerInput.closest('.field')?.toggleAttribute('hidden', false);
  }
  const path = `/api/file/${encodeURIComponent(key)}`;
  const link = byId<HTMLInputElement>('upload-link');
  if (link) link.value = `${cfg.base}${path}`;
  const a = byId<HTMLAnchorElement>('upload-download');
  if (a) a.href = path;
  const cmds = byId('upload-cmds');
  if (cmds) {
    const url = `${cfg.base}${path}`;
    const tok = owner ? `'X-Owner-Token: ${owner}'` : `'X-Owner-Token: <TOKEN>'`;
    cmds.textContent = [
      `curl -OJ ${url}`,
      `curl -H ${tok} -F file=@<new file> ${url}`,
      `curl -X DELETE -H ${tok} ${url}`,
    ].join('\n');
  }
  const json = byId('upload-json');
  if (json) json.textContent = pretty(body);
  byId('upload-result')?.removeAttribute('hidden');
}
