// Entry of a diagram render thread (thread-pool.ts). Plain JavaScript so that it starts on Node 20
// too, where a worker thread cannot load TypeScript until tsx is registered in it (Node 24/26 strip
// types themselves). Each engine module (./<name>.ts) is imported on its first job and exports
// warm() (loads its package and WebAssembly; the thread says "started" once it has, so the render
// deadline does not count a cold start) and render(source, format, options) -> string | Uint8Array;
// a DiagramError it throws is the user's mistake (400), anything else is the engine failing (422).
import { parentPort } from 'node:worker_threads';

if (!process.features.typescript) {
  const { register } = await import('tsx/esm/api');
  register();
}

const engines = new Map();

function load(name) {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`bad engine name ${name}`);
  let m = engines.get(name);
  if (!m) {
    m = import(`./${name}.ts`);
    engines.set(name, m);
  }
  return m;
}

parentPort.on('message', async ({ seq, job, warm }) => {
  if (warm) {
    // A replacement thread: load what its predecessor had, then say so.
    for (const name of warm) {
      try {
        const mod = await load(name);
        if (mod.warm) await mod.warm();
      } catch {}
    }
    parentPort.postMessage({ seq, warmed: true });
    return;
  }
  let reply;
  try {
    const mod = await load(job.engine);
    if (mod.warm) await mod.warm();
    parentPort.postMessage({ seq, started: true });
    const body = await mod.render(job.source, job.format, job.options);
    reply = { ok: true, body };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    const kind =
      e.name === 'DiagramError' ? 'syntax' : e.name === 'UnsupportedDiagram' ? 'unsupported' : 'failed';
    reply = { ok: false, kind, message: String(e.message).slice(0, 2000) };
    if (typeof e.line === 'number') reply.line = e.line;
  }
  parentPort.postMessage({ seq, reply });
});
