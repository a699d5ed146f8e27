// Content-Security-Policy for what the diagram service answers, like the rest of the site. A
// diagram's SVG can carry links and, from a hostile source, script or foreign objects: opened
// directly it must run nothing and load nothing but its own inline styles and data: images.
// The editor page has inline styles, the diagram image from the PlantUML origin and one form.

export const SVG_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  'font-src data:',
  // Links in diagrams ([[url]]) may still open, outside the sandbox; scripts never run.
  'sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation',
].join('; ');

export function editorCsp(plantumlUrl: string): string {
  const origin = new URL(plantumlUrl).origin;
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `img-src 'self' ${origin} data:`,
    `form-action 'self' ${origin}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The policy for a response of this content type; null for types a browser does not run. */
export function cspFor(contentType: string, editor: string): string | null {
  const t = contentType.toLowerCase();
  if (t.startsWith('image/svg+xml')) return SVG_CSP;
  if (t.startsWith('text/html') || t.startsWith('application/xhtml+xml')) return editor;
  return null;
}
