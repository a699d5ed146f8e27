// Byte counts for people (messages, logs, the page's script): one helper on the server and in the
// browser, so a size reads the same wherever it is shown.

/** The binary units, largest first. */
export const BINARY: [string, number][] = [
  ['TiB', 1024 ** 4],
  ['GiB', 1024 ** 3],
  ['MiB', 1024 ** 2],
  ['KiB', 1024],
];

/**
 * A byte count for people, in messages and logs: 16777216 -> "16 MiB", 1536 -> "1.5 KiB",
 * 10000 -> "9.77 KiB (10000 bytes)" (the exact count is kept when the unit rounds), 1 -> "1 byte".
 * formatBytes in schema.ts is for values written back into config (it must parse again).
 */
export function humanBytes(n: number): string {
  const unit = BINARY.find(([, size]) => Math.abs(n) >= size);
  if (!unit) return `${n} ${Math.abs(n) === 1 ? 'byte' : 'bytes'}`;
  const v = n / unit[1];
  const shown = Number(v.toFixed(2));
  return shown * unit[1] === n ? `${shown} ${unit[0]}` : `${shown} ${unit[0]} (${n} bytes)`;
}
