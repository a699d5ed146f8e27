// How this runtime runs TypeScript: Node >= 22.18 (24, 26) strips types itself; older ones (Node
// 20) need tsx, except in the test runner's compiled copy of the tree (scripts/test-compile.js),
// where every .ts file has its JavaScript beside it. Child processes that run .ts files take
// TS_EXEC_ARGV before the file name.
import { existsSync } from 'node:fs';

/** True when this Node runs .ts files without a loader. */
export const NATIVE_TS = Boolean(process.features.typescript);
/** True in the test runner's compiled copy: relative '.ts' names there were renamed to '.js'. */
export const COMPILED = existsSync(new URL('../.devutil-compiled', import.meta.url));
/** Node arguments a child needs to run a .ts entry point on this runtime. */
export const TS_EXEC_ARGV = NATIVE_TS || COMPILED ? [] : ['--import', 'tsx'];
