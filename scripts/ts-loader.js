// How this runtime runs TypeScript: Node >= 22.18 (24, 26) strips types itself; older ones (Node
// 20) need tsx. Child processes that run .ts files take TS_EXEC_ARGV before the file name.
/** True when this Node runs .ts files without a loader. */
export const NATIVE_TS = Boolean(process.features.typescript);
/** Node arguments a child needs to run a .ts entry point on this runtime. */
export const TS_EXEC_ARGV = NATIVE_TS ? [] : ['--import', 'tsx'];
