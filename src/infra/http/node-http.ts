// node:http for the modules that need its values. Taken with getBuiltinModule rather than an ESM
// import: importing a builtin builds a facade that reads every export, and node:http's lazy
// fetch/WebSocket getters then load Node's bundled undici, 10-30 ms of start-up nothing here uses.
// (`import type` from node:http costs nothing and stays the way to name its types.)
export const nodeHttp = process.getBuiltinModule('node:http');
