// Checks on captured JSON log lines shared by tests of the log shape.

/** The path of the first string field (at any depth) that holds a JSON object or array. */
export function jsonInString(v: unknown, path = ''): string | undefined {
  if (typeof v === 'string') {
    if (!/^\s*[[{]/.test(v)) return undefined;
    try {
      JSON.parse(v);
      return path;
    } catch {
      return undefined;
    }
  }
  if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      const hit = jsonInString(x, `${path}.${k}`);
      if (hit !== undefined) return hit;
    }
  return undefined;
}
