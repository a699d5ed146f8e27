// Kroki's answers: a diagram with the 5-day cache headers and an ETag (304 on a match), and errors
// in Kroki's shape, whose body follows the Accept header in the client's order: JSON
// {"error":{"code","message"}}, an HTML page, an SVG or PNG error card (what an <img> shows), or
// the default one line of text "Error <code>: <message>".
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../infra/http/errors.ts';
import { rasterise } from './renderer.ts';

export const MAX_AGE = 432_000; // 5 days, as Kroki and plantuml-server

export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  svg: 'image/svg+xml',
  png: 'image/png',
  jpeg: 'image/jpeg',
  pdf: 'application/pdf',
  txt: 'text/plain; charset=utf-8',
  utxt: 'text/plain; charset=utf-8',
  base64: 'text/plain; charset=utf-8',
};

/** The format Kroki picks from Accept for POST /{type}: the first supported one in the client's order. */
export function formatFromAccept(accept: string | undefined, formats: readonly string[]): string | null {
  for (const mime of acceptList(accept)) {
    for (const f of formats) if (CONTENT_TYPES[f]?.split(';')[0] === mime) return f;
  }
  return null;
}

/** Media types of an Accept header, highest q first (stable for equal q). */
export function acceptList(accept: string | undefined): string[] {
  if (!accept) return [];
  return accept
    .split(',')
    .slice(0, 32)
    .map((part, i) => {
      const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
      const q = params.find((p) => p.startsWith('q='));
      return { type, q: q ? Number(q.slice(2)) || 0 : 1, i };
    })
    .filter((x) => x.type && x.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((x) => x.type);
}

function escapeXml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

/** An error card: the message in a box, one <text> per line (what an <img> of a broken diagram shows). */
export function errorSvg(text: string): string {
  const lines = text
    .split('\n')
    .slice(0, 40)
    .map((l) => l.slice(0, 160));
  const width = Math.max(200, Math.min(1200, 16 + 7.2 * Math.max(...lines.map((l) => l.length))));
  const height = 24 + lines.length * 18;
  const rows = lines
    .map((l, i) => `<text x="8" y="${22 + i * 18}" xml:space="preserve">${escapeXml(l)}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.ceil(width)}" height="${height}" viewBox="0 0 ${Math.ceil(width)} ${height}"><rect width="100%" height="100%" fill="#fff5f5" stroke="#c92a2a"/><g font-family="monospace" font-size="13" fill="#c92a2a">${rows}</g></svg>`;
}

/** Sends `message` with `status` in Kroki's error shape, chosen by Accept. */
export async function sendKrokiError(
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  message: string,
  headers: Record<string, string | number> = {},
): Promise<FastifyReply> {
  reply.code(status).header('access-control-allow-origin', '*').header('cache-control', 'no-store');
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  const text = `Error ${status}: ${message}`;
  for (const mime of acceptList(req.headers.accept)) {
    if (mime === 'application/json')
      return reply.type('application/json').send(JSON.stringify({ error: { code: status, message } }));
    if (mime === 'text/html')
      return reply
        .type('text/html; charset=utf-8')
        .send(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Error ${status}</title></head><body><h1>Error ${status}</h1><pre>${escapeXml(message)}</pre></body></html>`,
        );
    if (mime === 'text/plain') break;
    if (mime === 'image/svg+xml') return reply.type('image/svg+xml').send(errorSvg(text));
    if (mime === 'image/png' || mime === 'image/*') {
      const png = await rasterise(Buffer.from(errorSvg(text)), 'png', 2048).catch(() => null);
      if (png) return reply.type('image/png').send(png);
    }
  }
  return reply.type('text/plain; charset=utf-8').send(text);
}

/** An AppError (or any error with a status) as a Kroki error; anything else is rethrown. */
export function krokiStatus(
  err: unknown,
): { status: number; message: string; headers: Record<string, string | number> } | null {
  if (err instanceof AppError) return { status: err.status, message: err.message, headers: err.headers };
  return null;
}
