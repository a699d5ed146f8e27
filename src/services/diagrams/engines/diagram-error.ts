// What an engine module throws inside a render process (render-process.js maps them by name):
// DiagramError is a mistake in the source (400, with the engine's message and line where it gives
// one), UnsupportedDiagram a source this engine does not render (422, naming what would),
// DiagramTooLarge a result over a size cap (413).

export class DiagramError extends Error {
  override name = 'DiagramError';
  line: number | undefined;
  constructor(message: string, line?: number) {
    super(message);
    this.line = line;
  }
}

export class UnsupportedDiagram extends Error {
  override name = 'UnsupportedDiagram';
}

export class DiagramTooLarge extends Error {
  override name = 'DiagramTooLarge';
}

/** The first "line N" an engine message names, if any. */
export function lineOf(message: string): number | undefined {
  const m = /\bline[: ]+(\d+)/i.exec(message);
  return m ? Number(m[1]) : undefined;
}
