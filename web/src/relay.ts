// Syncthing relay: the relay URI and live counters from GET /rest/api/v1/relay, polled while the
// page is visible. Field names are read tolerantly (strelaysrv's status names or shorter ones).
import { byId, setStatus } from './dom.ts';

type Json = Record<string, unknown>;

function pick(obj: Json, ...keys: string[]): unknown {
  for (const k of keys) if (obj[k] !== undefined) return obj[k];
  return undefined;
}

function num(v: unknown): string {
  return typeof v === 'number' ? v.toLocaleString() : '–';
}

function bytes(v: unknown): string {
  if (typeof v !== 'number') return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = v;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function initRelay(): void {
  const uri = byId<HTMLInputElement>('relay-uri');
  if (!uri) return;
  // Poll every 5 s while the relay answers; back off to 30 s while it does not (e.g. starting up).
  let timer: ReturnType<typeof setTimeout> | undefined;
  const schedule = (ok: boolean) => {
    clearTimeout(timer);
    timer = setTimeout(() => void poll(), ok ? 5000 : 30_000);
  };
  const poll = async (): Promise<void> => {
    if (document.hidden) return schedule(true);
    try {
      const r = await fetch('/rest/api/v1/relay', { cache: 'no-store' });
      const body = (await r.json().catch(() => ({}))) as Json;
      if (!r.ok) {
        const why = typeof body['message'] === 'string' ? body['message'] : `HTTP ${r.status}`;
        setStatus('relay-status', `Relay status unavailable: ${why}`, 'error');
        return schedule(false);
      }
      const data = (typeof body['data'] === 'object' && body['data'] ? body['data'] : body) as Json;
      const stats = (typeof data['stats'] === 'object' && data['stats'] ? data['stats'] : data) as Json;
      const u = pick(data, 'uri', 'relayUri', 'url');
      if (typeof u === 'string') {
        uri.value = u;
        // The example shows the real device ID too, not a placeholder.
        const ex = byId('relay-example');
        if (ex) ex.textContent = `default, ${u}`;
      }
      const set = (id: string, text: string) => {
        const el = byId(id);
        if (el) el.textContent = text;
      };
      set('relay-sessions', num(pick(stats, 'numActiveSessions', 'sessions', 'activeSessions')));
      set('relay-conns', num(pick(stats, 'numConnections', 'connections')));
      set('relay-bytes', bytes(pick(stats, 'bytesProxied', 'bytes', 'bytesRelayed')));
      const note = typeof data['note'] === 'string' ? data['note'] : '';
      if (data['running'] !== false)
        setStatus('relay-status', `Live, updated ${new Date().toLocaleTimeString()}.`, 'ok');
      else if (note) setStatus('relay-status', `${note.charAt(0).toUpperCase()}${note.slice(1)}.`, 'info');
      else setStatus('relay-status', 'The relay is not running.', 'error');
      schedule(true);
    } catch (err) {
      setStatus('relay-status', `Status unavailable: ${(err as Error).message}`, 'error');
      schedule(false);
    }
  };
  void poll();
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) void poll();
  });
}
