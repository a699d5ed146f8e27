// Turns a GitHub/Debian/PyPI URL, a git remote or an apt sources line into its proxied form
// ({proxy}/<host>/<path>) and the matching git/apt/pip/curl snippet. Pure: tested in Node.

export interface Converted {
  url: string;
  label: string;
  snippet: string;
}

export type ConvertResult = { ok: true; value: Converted } | { ok: false; error: string };

/** Allow-list match like the proxy's: `*.x` covers subdomains of x, a plain entry itself only. */
export function hostAllowed(host: string, allow: readonly string[]): boolean {
  return allow.some((a) => (a.startsWith('*.') ? host.endsWith(a.slice(1)) : host === a));
}

function parseTarget(raw: string): URL | null {
  let s = raw.trim();
  // git@github.com:owner/repo.git (scp-like ssh remote) -> https://github.com/owner/repo.git
  const scp = /^[\w.-]+@([\w.-]+):(?!\/\/)(.+)$/.exec(s);
  if (scp) s = `https://${scp[1]}/${scp[2]}`;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) s = `https://${s}`;
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}

function snippetFor(u: URL, proxied: string, proxyBase: string): { label: string; snippet: string } {
  const host = u.hostname;
  const parts = u.pathname.split('/').filter(Boolean);
  if (host === 'github.com' && (parts.length === 2 || (parts.length > 2 && parts[1]?.endsWith('.git')))) {
    const repo = parts
      .slice(0, 2)
      .join('/')
      .replace(/\.git$/, '');
    return { label: 'git clone', snippet: `git clone ${proxyBase}/github.com/${repo}.git` };
  }
  if (host === 'pypi.org' && (parts[0] === 'simple' || parts[0] === 'project')) {
    const pkg = parts[1] ?? '<package>';
    return { label: 'pip', snippet: `pip install --index-url ${proxyBase}/pypi.org/simple ${pkg}` };
  }
  if (host === 'files.pythonhosted.org' && /\.(whl|tar\.gz|zip)$/.test(u.pathname))
    return { label: 'pip', snippet: `pip install ${proxied}` };
  if (host.endsWith('debian.org') && !u.pathname.includes('/pool/') && !/\.[a-z]{2,4}$/.test(u.pathname)) {
    const root = proxied.replace(/\/+$/, '');
    const suite = host.startsWith('security.') ? 'bookworm-security' : 'bookworm';
    return { label: 'apt (/etc/apt/sources.list)', snippet: `deb ${root} ${suite} main` };
  }
  const name = parts.at(-1) ?? 'download';
  return { label: 'curl', snippet: `curl -fL -o ${JSON.stringify(decodeURIComponent(name))} ${proxied}` };
}

/** An apt line `deb [opts] URL suite components` keeps everything but the URL. */
function convertAptLine(line: string, proxyBase: string, allow: readonly string[]): ConvertResult | null {
  const m = /^(deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?)(\S+)(\s+.*)?$/.exec(line.trim());
  if (!m) return null;
  const r = convertUrl(m[2] ?? '', proxyBase, allow);
  if (!r.ok) return r;
  const root = r.value.url.replace(/\/+$/, '');
  const snippet = `${m[1]}${root}${m[3] ?? ''}`;
  return { ok: true, value: { url: root, label: 'apt (/etc/apt/sources.list)', snippet } };
}

function convertUrl(input: string, proxyBase: string, allow: readonly string[]): ConvertResult {
  const u = parseTarget(input);
  if (!u) return { ok: false, error: 'That does not look like an http(s) URL.' };
  if (u.port) return { ok: false, error: 'The proxy does not take URLs with a port.' };
  if (u.username || u.password)
    return {
      ok: false,
      error: 'Leave credentials out of the URL here; git asks for them when it needs them.',
    };
  const host = u.hostname.toLowerCase();
  if (!hostAllowed(host, allow)) return { ok: false, error: `${host} is not on this proxy's allow-list.` };
  const proxied = `${proxyBase}/${host}${u.pathname === '/' ? '' : u.pathname}${u.search}`;
  return { ok: true, value: { url: proxied, ...snippetFor(u, proxied, proxyBase) } };
}

export function convert(input: string, proxyBase: string, allow: readonly string[]): ConvertResult {
  const base = proxyBase.replace(/\/+$/, '');
  if (/^deb(-src)?\s/.test(input.trim())) {
    const apt = convertAptLine(input, base, allow);
    if (apt) return apt;
  }
  return convertUrl(input, base, allow);
}
