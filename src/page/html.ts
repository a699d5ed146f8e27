// A tiny escaping HTML template tag: every interpolated value is escaped unless it is already Raw
// (the output of another html`` call), so config values and the caller's address cannot inject markup.

export class Raw {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESC[c] ?? c);
}

type Value = string | number | boolean | null | undefined | Raw | Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Raw) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Raw {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Raw(out);
}

/** A copyable code example: the text is in the page for readers without JavaScript too. */
export function example(label: string, code: string): Raw {
  return html`<div class="example"><div class="example-head"><span>${label}</span><button type="button" class="copy" data-copy hidden>Copy</button></div><pre><code>${code}</code></pre></div>`;
}

/** A read-only output line with a copy button (filled by the page script). */
export function copyField(id: string, label: string, value = ''): Raw {
  return html`<div class="field copy-field"><label for="${id}">${label}</label><div class="row"><input id="${id}" type="text" readonly value="${value}" spellcheck="false"><button type="button" class="copy" data-copy-from="${id}" hidden>Copy</button></div></div>`;
}
