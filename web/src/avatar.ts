// Avatar preview: the email is hashed here and only the hash goes into the image URLs; the address
// itself never leaves the page. The URL uses MD5, the hash other sites (WordPress, GitLab, Gitea)
// build, so the preview is what those sites will show; the SHA-256 form is shown beside it.
import { byId, debounce, type PageConfig, setStatus } from './dom.ts';
import { emailHashes } from './md5.ts';

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
    const { md5: hash, sha256 } = await emailHashes(value);
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
    const both = sha256 ? ` · SHA-256 (also accepted): ${sha256}` : '';
    setStatus('avatar-status', `MD5, as other sites send it${what}: ${hash}${both}`, 'ok');
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
