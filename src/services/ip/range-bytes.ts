// The two address columns of an ip-range CSV row, parsed straight from the file's bytes: no string
// per field for half a million rows. Same rules as net.isIPv4 / isIPv6 plus expandV6 (no leading
// zeros in a dotted quad, at most four hex digits a group, one '::', a dotted tail, no zone id).

/** An IPv4 dotted quad in b[from, to) as an unsigned 32-bit number; -1 when it is not one. */
export function parseV4(b: Uint8Array, from: number, to: number): number {
  let n = 0;
  let octet = -1;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = b[i] as number;
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // leading zero
      octet = (octet < 0 ? 0 : octet * 10) + (c - 48);
      if (octet > 255 || ++digits > 3) return -1;
    } else if (c === 46 && digits > 0 && dots < 3) {
      n = n * 256 + octet;
      octet = -1;
      digits = 0;
      dots++;
    } else return -1;
  }
  return dots === 3 && digits > 0 ? n * 256 + octet : -1;
}

const hex = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;

/** The groups read so far (shared: parsing never yields half-way). */
const groups = new Uint16Array(8);

/**
 * An IPv6 address in b[from, to) (either case, '::', dotted IPv4 tail) into out[0..3] as four
 * 32-bit words, most significant first; false when it is not one.
 */
export function parseV6(b: Uint8Array, from: number, to: number, out: Uint32Array): boolean {
  let k = 0;
  let gap = -1; // how many groups came before '::'
  let i = from;
  if (to - i >= 2 && b[i] === 58 && b[i + 1] === 58) {
    gap = 0;
    i += 2;
  }
  while (i < to) {
    let v = 0;
    let j = i;
    for (; j < to && j - i < 5; j++) {
      const h = hex(b[j] as number);
      if (h < 0) break;
      v = v * 16 + h;
    }
    if (j < to && b[j] === 46) {
      const q = k > 6 ? -1 : parseV4(b, i, to); // a dotted tail: the last two groups
      if (q < 0) return false;
      groups[k++] = q >>> 16;
      groups[k++] = q & 0xffff;
      break;
    }
    if (j === i || j - i > 4 || k === 8) return false;
    groups[k++] = v;
    if (j === to) break;
    if (b[j] !== 58) return false;
    if (j + 1 < to && b[j + 1] === 58) {
      if (gap >= 0) return false; // a second '::'
      gap = k;
      i = j + 2;
    } else {
      i = j + 1;
      if (i === to) return false; // a trailing single ':'
    }
  }
  const fill = gap < 0 ? 0 : 8 - k;
  if (gap < 0 ? k !== 8 : fill < 1) return false; // '::' stands for at least one group
  for (let w = 0; w < 4; w++) {
    const t = 2 * w;
    const hi = t < gap || gap < 0 ? groups[t] : t < gap + fill ? 0 : groups[t - fill];
    const lo = t + 1 < gap || gap < 0 ? groups[t + 1] : t + 1 < gap + fill ? 0 : groups[t + 1 - fill];
    out[w] = (((hi as number) << 16) | (lo as number)) >>> 0;
  }
  return true;
}

/** Whether b[from, to) is only whitespace (as String#trim sees Latin-1: tab to CR, space, NBSP). */
export function blank(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = b[i] as number;
    if (!((c >= 9 && c <= 13) || c === 32 || c === 160)) return false;
  }
  return true;
}
