// Message relay form. The bot key lives only in the password field and the one request body:
// it is never stored, put in a URL or logged by the page.
import { byId, pretty, setStatus } from './dom.ts';

export function initTelegram(): void {
  const form = byId<HTMLFormElement>('telegram-form');
  const send = byId<HTMLButtonElement>('tg-send');
  const out = byId('tg-json');
  if (!form || !send || !out) return;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const v = (id: string) => byId<HTMLInputElement>(id)?.value.trim() ?? '';
    if (!v('tg-key') || !v('tg-chat'))
      return setStatus('tg-status', 'The bot key and the chat id are both needed.', 'error');
    const body: Record<string, unknown> = { apiKey: v('tg-key'), chatId: v('tg-chat') };
    const text = byId<HTMLTextAreaElement>('tg-text')?.value ?? '';
    if (text) body['msgText'] = text;
    body['parseMode'] = byId<HTMLSelectElement>('tg-mode')?.value ?? 'MarkdownV2';
    if (byId<HTMLInputElement>('tg-escape')?.checked) body['escape'] = true;
    send.disabled = true;
    setStatus('tg-status', 'Sending…');
    try {
      const r = await fetch('/rest/api/v1/telegram', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        cache: 'no-store',
        referrerPolicy: 'no-referrer',
      });
      const reply = (await r.json().catch(() => null)) as { status?: number; msg?: string } | null;
      out.textContent = pretty(reply);
      out.hidden = false;
      if (r.ok && reply?.status === 1) setStatus('tg-status', 'Sent.', 'ok');
      else setStatus('tg-status', `Not sent (${r.status}): ${reply?.msg ?? r.statusText}`, 'error');
    } catch (err) {
      setStatus('tg-status', `Not sent: ${(err as Error).message}`, 'error');
    } finally {
      send.disabled = false;
    }
  });
}
