// What every diagram engine pool is asked and answers, and how a render fails outside the engine
// (shared by the render processes, the system programs and the browser pool).

/**
 * CPU priority of renders (nice). The main lane runs at the server's own priority: below it, on a
 * machine shared with other busy processes, small diagrams starved past their deadline (measured:
 * at nice 10 on the loaded 2-core development machine every row of the bomb corpus timed out).
 */
export const RENDER_NICE = 0;
/** Suspects' renders (the quarantine lane): the lowest priority there is. */
export const QUARANTINE_NICE = 19;

/** Render `source` with engine `engine` (a module in this folder, or a system program). */
export interface RenderJob {
  engine: string;
  source: string;
  format: string;
  options: Record<string, string>;
}

/** What an engine answers (structured clone across the IPC channel). */
export type RenderReply =
  | { ok: true; body: Uint8Array | string }
  | {
      ok: false;
      /** syntax: the source's mistake (400); too-large: the answer is over its cap (413). */
      kind: 'syntax' | 'unsupported' | 'failed' | 'too-large';
      message: string;
      line?: number;
    };

/** No result within the render deadline; the render was killed. */
export class RenderTimeout extends Error {
  /**
   * CPU time the render used (ms), where known: far less than the deadline means the machine
   * starved it, not that the diagram ran away.
   */
  readonly cpuMs: number | undefined;
  constructor(message: string, cpuMs?: number) {
    super(message);
    this.cpuMs = cpuMs;
  }
}

/** The engine's process died under the render: out of memory (`memory`), or a crash. */
export class RenderCrashed extends Error {
  readonly memory: boolean;
  constructor(message: string, memory: boolean) {
    super(message);
    this.memory = memory;
  }
}

export class RenderPoolClosed extends Error {}
