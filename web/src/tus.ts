// A small tus 1.0 client (core + creation) for the home page's large uploads: chunks sent with
// XMLHttpRequest (upload progress), the upload URL remembered in localStorage so a reload or a
// dropped connection resumes from the server's offset instead of starting over. tus-js-client does
// the same and more, but weighs 87 KB minified against this page's 16 KB bundle.

export interface TusOptions {
  endpoint: string;
  file: File;
  metadata: Record<string, string>;
  headers: Record<string, string>;
  /** Bytes per PATCH: what a failure can cost at most (the server keeps what arrived anyway). */
  chunkSize?: number;
  onProgress(sent: number, total: number): void;
  /** Told when the connection dropped and the upload waits to resume. */
  onRetry?(delayMs: number): void;
  /** Set by the client: abort() stops the upload (the server keeps it for a later resume). */
  control?: { abort?: () => void };
}

export interface TusResult {
  status: number;
  /** The 2.1 JSON (or the error envelope of a refused completion). */
  body: unknown;
  ownerToken: string | null;
}

const DELAYS = [1000, 3000, 5000, 10000, 20000, 30000];

const b64 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));

interface Answer {
  status: number;
  header(name: string): string | null;
  text: string;
}

function send(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: Blob | null,
  o: TusOptions,
  progress?: (n: number) => void,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader('Tus-Resumable', '1.0.0');
    for (const [k, v] of Object.entries({ ...o.headers, ...headers })) xhr.setRequestHeader(k, v);
    if (progress) xhr.upload.addEventListener('progress', (e) => progress(e.loaded));
    xhr.addEventListener('load', () =>
      resolve({ status: xhr.status, header: (n) => xhr.getResponseHeader(n), text: xhr.responseText }),
    );
    xhr.addEventListener('error', () => reject(new Error('network')));
    xhr.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
    if (o.control) o.control.abort = () => xhr.abort();
    xhr.send(body);
  });
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** Uploads `o.file` with tus, resuming a previous attempt of the same file and key if the server has it. */
export async function tusUpload(o: TusOptions): Promise<TusResult> {
  const f = o.file;
  const memo = `tus:${o.endpoint}:${o.metadata['key']}:${f.name}:${f.size}:${f.lastModified}`;
  const chunk = o.chunkSize ?? 8 * 1024 * 1024;
  let url = localStorage.getItem(memo);
  let offset = -1;
  let failures = 0;
  for (;;) {
    try {
      if (url && offset < 0) {
        const head = await send('HEAD', url, {}, null, o);
        if (head.status === 200) offset = Number(head.header('Upload-Offset'));
        else url = null;
      }
      if (!url) {
        const meta = Object.entries(o.metadata)
          .map(([k, v]) => `${k} ${b64(v)}`)
          .join(',');
        const made = await send(
          'POST',
          o.endpoint,
          { 'Upload-Length': String(f.size), 'Upload-Metadata': meta },
          null,
          o,
        );
        const loc = made.header('Location');
        if (made.status !== 201 || !loc)
          return { status: made.status, body: parse(made.text), ownerToken: null };
        url = new URL(loc, o.endpoint).toString();
        localStorage.setItem(memo, url);
        offset = 0;
      }
      if (offset >= f.size && f.size > 0) {
        // The last answer was lost, the upload is complete: the result is still on the server.
        const got = await send('GET', url, {}, null, o);
        localStorage.removeItem(memo);
        return { status: got.status, body: parse(got.text), ownerToken: null };
      }
      const start = offset;
      const part = f.slice(start, Math.min(f.size, start + chunk));
      const res = await send(
        'PATCH',
        url,
        { 'Upload-Offset': String(start), 'Content-Type': 'application/offset+octet-stream' },
        part,
        o,
        (n) => o.onProgress(start + n, f.size),
      );
      if (res.status === 409 || res.status === 423) {
        offset = -1; // someone else moved it on (or still holds it): ask where it stands
        continue;
      }
      if (res.status !== 204) {
        if (res.status === 404) localStorage.removeItem(memo);
        return { status: res.status, body: parse(res.text), ownerToken: null };
      }
      failures = 0;
      offset = Number(res.header('Upload-Offset'));
      o.onProgress(offset, f.size);
      const result = res.header('X-Upload-Result');
      if (offset >= f.size) {
        localStorage.removeItem(memo);
        const json = result
          ? new TextDecoder().decode(Uint8Array.from(atob(result), (c) => c.charCodeAt(0)))
          : '';
        return { status: 200, body: parse(json), ownerToken: res.header('X-Owner-Token') };
      }
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      // The connection dropped: wait, then ask the server how much it kept.
      const delay = DELAYS[Math.min(failures++, DELAYS.length - 1)] ?? 30000;
      if (failures > 20) throw err;
      o.onRetry?.(delay);
      await new Promise((r) => setTimeout(r, delay));
      offset = -1;
    }
  }
}
