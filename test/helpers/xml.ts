// A well-formedness check for the SVG the diagram engines answer: one root element of the expected
// name, balanced tags, quoted attributes, known or numeric entity references, and nothing but
// comments, processing instructions and a DOCTYPE outside the root. No DTD processing, no namespaces.

const NAME = String.raw`[A-Za-z_:][\w.:-]*`;
const TAG = new RegExp(String.raw`^<(/?)(${NAME})((?:\s+${NAME}\s*=\s*(?:"[^"]*"|'[^']*'))*\s*)(/?)>`);
const ENTITY = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/;

/** What makes `text` not well-formed XML with root element `root`, or null when it is. */
export function xmlProblem(text: string, root: string): string | null {
  const s = text.replace(/^\uFEFF/, '');
  const open: string[] = [];
  let roots = 0;
  let i = 0;
  while (i < s.length) {
    const lt = s.indexOf('<', i);
    const chars = s.slice(i, lt < 0 ? s.length : lt);
    if (ENTITY.test(chars)) return `a bare & near ${i}`;
    if (!open.length && chars.trim()) return `text outside the root element near ${i}`;
    if (lt < 0) break;
    const rest = s.slice(lt);
    const skip = (end: string, what: string) => {
      const e = s.indexOf(end, lt);
      return e < 0 ? `an unterminated ${what} at ${lt}` : e + end.length;
    };
    let next: number | string;
    if (rest.startsWith('<!--')) next = skip('-->', 'comment');
    else if (rest.startsWith('<![CDATA['))
      next = open.length ? skip(']]>', 'CDATA section') : 'CDATA outside root';
    else if (rest.startsWith('<?')) next = skip('?>', 'processing instruction');
    else if (rest.startsWith('<!DOCTYPE'))
      next = roots
        ? 'a DOCTYPE after the root'
        : skip(/\[/.test(rest.slice(0, rest.indexOf('>'))) ? ']>' : '>', 'DOCTYPE');
    else {
      const m = TAG.exec(rest);
      if (!m) return `a malformed tag at ${lt}: ${rest.slice(0, 40)}`;
      const [whole, close, name, attrs, selfClose] = m as unknown as [string, string, string, string, string];
      if (close) {
        if (attrs.trim() || selfClose) return `a malformed end tag </${name}> at ${lt}`;
        if (open.pop() !== name) return `</${name}> at ${lt} closes no open <${name}>`;
      } else {
        if (attrs.includes('<')) return `a < in the attributes of <${name}> at ${lt}`;
        if (ENTITY.test(attrs)) return `a bare & in the attributes of <${name}> at ${lt}`;
        if (!open.length) {
          if (++roots > 1) return `a second root element <${name}> at ${lt}`;
          if (name !== root) return `the root element is <${name}>, not <${root}>`;
        }
        if (!selfClose) open.push(name);
      }
      next = lt + whole.length;
    }
    if (typeof next === 'string') return next;
    i = next;
  }
  if (open.length) return `<${open.at(-1)}> is never closed`;
  return roots ? null : 'no root element';
}
