// Media types: sniffed from the first bytes when the client declared none (or octet-stream), and
// the list of types that are already compressed, so the store does not waste CPU on them.

const MAGIC: [string, number[], number?][] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
  ['image/bmp', [0x42, 0x4d]],
  ['application/pdf', [0x25, 0x50, 0x44, 0x46, 0x2d]],
  ['application/zip', [0x50, 0x4b, 0x03, 0x04]],
  ['application/gzip', [0x1f, 0x8b]],
  ['application/x-bzip2', [0x42, 0x5a, 0x68]],
  ['application/x-xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['application/zstd', [0x28, 0xb5, 0x2f, 0xfd]],
  ['application/x-7z-compressed', [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
  ['application/vnd.rar', [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07]],
  ['application/wasm', [0x00, 0x61, 0x73, 0x6d]],
  ['application/x-elf', [0x7f, 0x45, 0x4c, 0x46]],
  ['audio/ogg', [0x4f, 0x67, 0x67, 0x53]],
  ['audio/flac', [0x66, 0x4c, 0x61, 0x43]],
  ['audio/mpeg', [0x49, 0x44, 0x33]],
  ['video/webm', [0x1a, 0x45, 0xdf, 0xa3]],
];

const EXT: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  xml: 'application/xml',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  svg: 'image/svg+xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  log: 'text/plain',
  sh: 'application/x-sh',
  tar: 'application/x-tar',
};

function startsWith(b: Buffer, sig: number[], at = 0): boolean {
  if (b.length < at + sig.length) return false;
  return sig.every((v, i) => b[at + i] === v);
}

function looksLikeText(b: Buffer): boolean {
  if (b.length === 0) return false;
  if (b.includes(0)) return false;
  // stream: true holds back a multi-byte character cut at the end of the sample instead of flagging it.
  const s = new TextDecoder('utf-8').decode(b, { stream: true });
  return !s.includes('\ufffd');
}

/** A media type for content sent without a useful one: magic numbers, then the extension, then text. */
export function sniff(sample: Buffer, filename: string): string {
  for (const [type, sig, at] of MAGIC) if (startsWith(sample, sig, at)) return type;
  if (startsWith(sample, [0x52, 0x49, 0x46, 0x46]) && sample.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  if (sample.subarray(4, 8).toString('latin1') === 'ftyp') {
    const brand = sample.subarray(8, 12).toString('latin1');
    return /^(avif|avis)/.test(brand)
      ? 'image/avif'
      : /^(heic|heix|mif1)/.test(brand)
        ? 'image/heic'
        : 'video/mp4';
  }
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(filename)?.[1]?.toLowerCase();
  const byExt = ext && Object.hasOwn(EXT, ext) ? EXT[ext] : undefined;
  const text = looksLikeText(sample);
  if (byExt)
    return byExt.startsWith('text/') || byExt.endsWith('+xml') || byExt.includes('json')
      ? `${byExt}${text ? '; charset=utf-8' : ''}`
      : byExt;
  return text ? 'text/plain; charset=utf-8' : 'application/octet-stream';
}

/** Declared types that are nonsense or unsafe to echo back in a header: fall back to sniffing. */
const TYPE =
  /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,128}(?:\s*;\s*[a-z0-9!#$&^_.+-]{1,64}=(?:[a-z0-9!#$&^_.+-]{1,128}|"[^"\\\r\n]{0,128}"))*$/i;

export function usableDeclaredType(t: string | undefined): string | null {
  const v = t?.trim() ?? '';
  if (!v || /^application\/octet-stream\b/i.test(v) || !TYPE.test(v)) return null;
  return v;
}

const COMPRESSED = [
  /^image\/(?!svg|bmp|x-ms-bmp|tiff|x-portable|x-icon|vnd\.microsoft\.icon)/,
  /^video\//,
  /^audio\/(?!wav|x-wav|wave|aiff|x-aiff)/,
  /^application\/(zip|gzip|x-gzip|x-bzip2|x-xz|zstd|x-7z-compressed|vnd\.rar|x-rar-compressed|x-lzip|x-lz4|x-compress|java-archive|epub\+zip|vnd\.android\.package-archive|x-apple-diskimage|pdf|font-woff2?|vnd\.openxmlformats[^;]*|vnd\.oasis\.opendocument[^;]*)\b/,
  /^font\/(woff|woff2)\b/,
];

/** True for media types whose content is already compressed (skip without even sampling). */
export function alreadyCompressed(type: string): boolean {
  const t = type.toLowerCase();
  return COMPRESSED.some((re) => re.test(t));
}
