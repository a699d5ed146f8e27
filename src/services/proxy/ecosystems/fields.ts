// Config fields shared by the ecosystem profiles' settings.
import { type Field, url } from '../../../infra/config/schema.ts';

/** An upstream base URL: https only (the proxy never fetches over plain http), no trailing slash. */
export function httpsUrl(def: string, doc: string): Field<string> {
  const f = url(def, { doc });
  return {
    ...f,
    parse(raw) {
      const r = f.parse(raw);
      if (r.ok && !r.value.startsWith('https://'))
        return { ok: false, error: `expected an https:// URL, got ${JSON.stringify(raw)}` };
      return r;
    },
  };
}
