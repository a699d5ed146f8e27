// File storage tool: pick or drop a file, choose a key, upload with XMLHttpRequest so the upload's
// progress events can drive the progress bar (fetch has no upload progress). Owner tokens of this
// page's uploads are remembered in memory only (never in storage), so a refused re-upload (409) can
// offer to replace or delete the file without the token being lost from view. Files over the form's
// data-resumable-over size go through tus (./tus.ts) and survive a dropped connection or a reload.
import { humanBytes } from '../../src/infra/config/bytes.ts';
import { byId, type PageConfig, pretty, setStatus } from './dom.ts';
import { tusUpload } from './tus.ts';

const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** key -> owner token, for files uploaded from this page since it was loaded. */
const owned = new Map<string, string>();

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
  const del = byId<HTMLButtonElement>('upload-delete');
  if (!form || !input || !keyInput || !drop || !bar || !pct || !cancel || !go || !del) return;
  del.addEventListener('click', () => void deleteFile(keyInput.value.trim(), del));
  let xhr: XMLHttpRequest | null = null;
  const tus: { abort?: () => void } = {};
  const resumableOver = Number(form.dataset['resumableOver'] ?? Number.POSITIVE_INFINITY);

  const picked = () => {
    const f = input.files?.[0];
    const text = byId('drop-text');
    if (text) text.textContent = f ? `${f.name} (${humanBytes(f.size)})` : 'Drop a file here or choose one';
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
  cancel.addEventListener('click', () => {
    xhr?.abort();
    tus.abort?.();
  });

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
    // Only a token the user entered (or accepted prefilled): an upload never replaces by surprise.
    const token = byId<HTMLInputElement>('upload-token')?.value.trim() || undefined;
    if (file.size > resumableOver) return resumable(file, key, token);
    const body = new FormData();
    body.append('file', file, file.name);
    const req = new XMLHttpRequest();
    xhr = req;
    let events = 0;
    req.open('POST', `/api/file/${encodeURIComponent(key)}`);
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
    req.addEventListener('load', () =>
      showResult(
        req.status,
        parse(req.responseText),
        req.getResponseHeader('X-Owner-Token'),
        key,
        token,
        cfg,
      ),
    );
    setProgress(0);
    // The previous result (its owner token and link) stays until a new upload succeeds.
    setStatus('upload-status', `Uploading ${file.name}…`);
    go.disabled = true;
    cancel.hidden = false;
    req.send(body);
  });

  const resumable = (file: File, key: string, token: string | undefined) => {
    setProgress(0);
    setStatus('upload-status', `Uploading ${file.name} (resumable)…`);
    go.disabled = true;
    cancel.hidden = false;
    const done = () => {
      go.disabled = false;
      cancel.hidden = true;
      tus.abort = undefined;
    };
    tusUpload({
      endpoint: new URL('/api/upload/', location.href).toString(),
      file,
      metadata: { key, filename: file.name, filetype: file.type },
      headers: token ? { 'X-Owner-Token': token } : {},
      control: tus,
      onProgress: (sent, total) => {
        setProgress(total ? Math.floor((sent / total) * 100) : 100);
        setStatus('upload-status', `Uploading ${file.name} (resumable)…`);
      },
      onRetry: (ms) =>
        setStatus('upload-status', `Connection lost; resuming in ${Math.round(ms / 1000)} s…`, 'error'),
    }).then(
      (r) => {
        done();
        showResult(r.status, r.body, r.ownerToken, key, token, cfg);
      },
      (err: unknown) => {
        done();
        const aborted = (err as Error).name === 'AbortError';
        setStatus(
          'upload-status',
          aborted
            ? 'Upload paused: upload the same file again to resume.'
            : 'The upload failed (network error).',
          'error',
        );
      },
    );
  };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not JSON: show the text as is
  }
}

/** DELETE with the typed or remembered owner token. */
async function deleteFile(key: string, button: HTMLButtonElement): Promise<void> {
  const token = byId<HTMLInputElement>('upload-token')?.value.trim() || owned.get(key);
  if (!KEY.test(key)) return setStatus('upload-status', 'Enter the key of the file to delete.', 'error');
  if (!token) {
    byId('upload-token-field')?.removeAttribute('hidden');
    return setStatus('upload-status', 'Enter the owner token of this file to delete it.', 'error');
  }
  button.disabled = true;
  try {
    const r = await fetch(`/api/file/${encodeURIComponent(key)}`, {
      method: 'DELETE',
      headers: { 'X-Owner-Token': token },
    });
    const body = (await r.json().catch(() => ({}))) as { message?: unknown };
    if (!r.ok) {
      const why = typeof body.message === 'string' ? body.message : r.statusText;
      return setStatus('upload-status', `Delete refused (${r.status}): ${why}`, 'error');
    }
    owned.delete(key);
    if (byId('upload-result')?.dataset['key'] === key) byId('upload-result')?.setAttribute('hidden', '');
    button.hidden = true;
    setStatus('upload-status', `Deleted “${key}”.`, 'ok');
  } catch (err) {
    setStatus('upload-status', `Delete failed: ${(err as Error).message}`, 'error');
  } finally {
    button.disabled = false;
  }
}

function showResult(
  status: number,
  body: unknown,
  given: string | null,
  key: string,
  sent: string | undefined,
  cfg: PageConfig,
): void {
  const msg = typeof body === 'object' && body && 'message' in body ? String(body.message) : '';
  if (status !== 200) {
    let next = '';
    if (status === 409) {
      // The key is taken: ask for its token (prefilled when this page uploaded it) and offer delete.
      byId('upload-token-field')?.removeAttribute('hidden');
      const field = byId<HTMLInputElement>('upload-token');
      const known = owned.get(key);
      if (field && known && !field.value) field.value = known;
      byId('upload-delete')?.removeAttribute('hidden');
      next = known
        ? ' Your owner token for it is filled in: upload again to replace the file, or delete it.'
        : ' With its owner token you can replace it (upload again) or delete it.';
    }
    setStatus('upload-status', `Upload refused (${status}): ${msg || `HTTP ${status}`}.${next}`, 'error');
    return;
  }
  const bar = byId<HTMLProgressElement>('upload-progress');
  if (bar) bar.value = 100;
  const pct = byId('upload-pct');
  if (pct) pct.textContent = '100%';
  setStatus('upload-status', `Stored under “${key}”.`, 'ok');
  // A new key answers with its token; a replacement keeps the token that was sent.
  const owner = given ?? sent ?? null;
  if (owner) owned.set(key, owner);
  const ownerInput = byId<HTMLInputElement>('upload-owner');
  if (ownerInput) {
    ownerInput.value = owner ?? '(unchanged: this upload replaced a file you own)';
    ownerInput.closest('.field')?.toggleAttribute('hidden', false);
  }
  byId('upload-delete')?.removeAttribute('hidden');
  const path = `/api/file/${encodeURIComponent(key)}`;
  const link = byId<HTMLInputElement>('upload-link');
  if (link) link.value = `${cfg.base}${path}`;
  const a = byId<HTMLAnchorElement>('upload-download');
  if (a) a.href = path;
  const qr = byId<HTMLImageElement>('upload-qr');
  if (qr) {
    qr.src = `/qr.svg?text=${encodeURIComponent(`${cfg.base}${path}`)}`;
    qr.hidden = false;
  }
  const cmds = byId('upload-cmds');
  if (cmds) {
    const url = `${cfg.base}${path}`;
    const tok = owner ? `'X-Owner-Token: ${owner}'` : `'X-Owner-Token: <TOKEN>'`;
    cmds.textContent = [
      // Into downloads/: in the folder of the uploaded file, -OJ would meet a file of the same name.
      `curl -fOJ --output-dir downloads --create-dirs ${url}`,
      `curl -f -H ${tok} -F file=@<new file> ${url}`,
      `curl -f -X DELETE -H ${tok} ${url}`,
    ].join('\n');
  }
  const json = byId('upload-json');
  if (json) json.textContent = pretty(body);
  const result = byId('upload-result');
  if (result) {
    result.dataset['key'] = key;
    result.removeAttribute('hidden');
  }
}
