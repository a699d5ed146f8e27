export declare function longestFirst(files: string[], durations: Record<string, number>): string[];
export declare function takeNext(
  queue: string[],
  running: Iterable<string>,
  heavy: Record<string, string>,
): string | undefined;
export declare function mayStart(
  queue: string[],
  running: Iterable<string>,
  heavy: Record<string, string>,
  concurrency: number,
): boolean;
export declare function nextLimit(
  limit: number,
  busy: number,
  slotsTaken: boolean,
  base: number,
  max: number,
): number;
