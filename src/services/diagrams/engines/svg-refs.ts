// What in an SVG reaches outside it: an embedded diagram must not make its reader's browser call
// anyone (a font host learns who reads what). externalReferences() lists such references (the
// tests run it over every language's answer); localOnly() drops the ones engines put in on their
// own (beautiful-mermaid's @import of Google fonts), leaving the font stacks' system fallbacks.

/** A URL that is not inside the document: anything but a fragment (#id) or a data: URL. */
function external(url: string): boolean {
  const u = url
    .trim()
    .replace(/^['"]|['"]$/g, '')
    .trim();
  return u !== '' && !u.startsWith('#') && !/^data:/i.test(u);
}

/** A CSS @import rule: its URL is group 2 (url(...)) or 4 (a string). */
const IMPORT = /@import\s+(?:url\(\s*(['"]?)([^'")]*)\1\s*\)|(['"])([^'"]*)\3)[^;<]*;?/gi;

/** Every reference of `svg` that its reader's browser would fetch: @import, url(...), href/xlink:href/src but links'. */
export function externalReferences(svg: string): string[] {
  const out: string[] = [];
  for (const m of svg.matchAll(IMPORT)) if (external(m[2] ?? m[4]!)) out.push(`@import ${m[2] ?? m[4]}`);
  for (const m of svg.replace(IMPORT, '').matchAll(/url\(\s*(['"]?)([^'")]*)\1\s*\)/gi))
    if (external(m[2]!)) out.push(`url(${m[2]})`);
  // A link (<a href>) is followed when its reader clicks it, never fetched by showing the SVG:
  // diagrams keep their hyperlinks (PlantUML's [[url]], bpmn.io's required watermark link).
  for (const tag of svg.matchAll(/<([A-Za-z][\w:.-]*)\b[^>]*>/g)) {
    if (tag[1]!.toLowerCase() === 'a' || tag[1]!.toLowerCase().endsWith(':a')) continue;
    for (const m of tag[0].matchAll(/\s(?:xlink:href|href|src)\s*=\s*("([^"]*)"|'([^']*)')/gi)) {
      const url = (m[2] ?? m[3] ?? '').replace(/&amp;/g, '&');
      if (external(url)) out.push(`${m[0].trim().split('=')[0]}=${url}`);
    }
  }
  return out;
}

/** `svg` without @import rules and url(...) values (in its styles) that point outside it. */
export function localOnly(svg: string): string {
  if (!/@import|url\(\s*['"]?[a-z/]/i.test(svg)) return svg;
  const css = (text: string) =>
    text
      .replace(IMPORT, (rule, _q, url, _q2, str) => (external(url ?? str) ? '' : rule))
      .replace(/url\(\s*(['"]?)([^'")]*)\1\s*\)/gi, (v, _q, url) => (external(url) ? 'none' : v));
  // Styles only: a label that reads "url(...)" stays as it is.
  return svg
    .replace(/(<style\b[^>]*>)([\s\S]*?)(<\/style>)/gi, (_m, open, text, close) => open + css(text) + close)
    .replace(/(\sstyle\s*=\s*)("[^"]*"|'[^']*')/gi, (_m, attr, value) => attr + css(value));
}
