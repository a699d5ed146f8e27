// The D2 engine's own process, one per render thread that renders D2 (d2.ts starts it). D2 is the
// Go compiler built to WebAssembly (22 MB): V8 optimises such a module on background threads for a
// minute or more after it loads, and a process cannot exit while they run, so D2 inside the server
// held every shutdown up by that long (d2.ts now also starts it with --liftoff-only, which skips
// that optimising and its memory). Here it is a child that is killed at once instead: when its
// render thread goes (shutdown, a render past its deadline, an idle thread), the IPC channel closes
// and the process ends itself with SIGKILL (it keeps nothing worth a clean exit). Plain JavaScript,
// so it starts the same on Node 20.
import { D2 } from '@terrastruct/d2';

const engine = new D2();
const OPS = new Set(['compile', 'render']);

process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
process.on('message', async ({ id, op, args }) => {
  try {
    if (!OPS.has(op)) throw new Error(`unknown operation ${op}`);
    const out = await engine[op](...args);
    process.send({ id, ok: true, out });
  } catch (err) {
    process.send({ id, ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});
process.send({ ready: true });
