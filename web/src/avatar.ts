// Avatar preview: the email is hashed here (SHA-256, or MD5 without crypto.subtle) and only the
// hash goes into the image URLs; the address itself never leaves the page.
import { byId, debounce, type PageConfig, setStatus } from './dom.ts';
import { emailHash } from './md5.ts';

const SIZES = [40, 80, 160];

export function initAvatar(cfg: PageConfig): void {
  const email = byId<HTMLInputElement>('avatar-email');
  const def = byId<HTMLSelectElement>('avatar-d');
  const box = byId('avatar-previews');
  const url = byId<HTMLInputElement>('avatar-url');
  if (!email || !def || !box || !url) return;

  const update = async () => {
    // Until the user types, show what the placeholder address would get, so the section is not empty.
    const typed = email.value.trim();
    const value = typed || email.placeholder;
    const { hash, algo } = await emailHash(value);
    const d = def.value;
    const extra = d === 'initials' ? `&name=${encodeURIComponent(value.split('@')[0] ?? '')}` : '';
    box.replaceChildren(
      ...SIZES.map((s) => {
        const fig = document.createElement('figure');
        const img = document.createElement('img');
        img.src = `/avatar/${hash}?s=${s * 2}&d=${encodeURIComponent(d)}${extra}`;
        img.width = s;
        img.height = s;
        img.alt = `Avatar, ${s} pixels`;
        const cap = document.createElement('figcaption');
        cap.textContent = `${s}px`;
        fig.append(img, cap);
        return fig;
      }),
    );
    url.value = `${cfg.avatar}/avatar/${hash}?s=80&d=${encodeURIComponent(d)}${extra}`;
    const what = typed ? '' : ` (example for ${value})`;
    setStatus('avatar-status', `${algo === 'sha256' ? 'SHA-256' : 'MD5'} hash${what}: ${hash}`, 'ok');
  };
  email.addEventListener(
    'input',
    debounce(() => void update(), 300),
  );
  def.addEventListener('change', () => void update());
  byId('avatar-form')?.addEventListener('submit', (e) => {
    e.preventDefault();
    void update();
  });
  void update();
}
