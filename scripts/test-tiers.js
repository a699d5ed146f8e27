// The test tiers scripts/test.js reads (docs/development.md, "Running the tests"). `npm test`, the fast tier, runs every test
// file but WHOLE_SUITE_ONLY; `npm run test:all` runs them all (CI, on Node 26); CI's leg on the older
// runtime (Node 20) runs the fast tier plus RUNTIME_SENSITIVE. Keys are repository-relative test
// files; test/repo/suite.test.ts fails on one that is gone or has no reason.

/**
 * Slow files (a minute or more each on a busy 2-core machine): fleets of instances, floods and
 * bombs, real systems that take long to start, walks in a real browser, the container image, and
 * the unit files that wait on JVM faults, class-archive training or browser pools. The fast tier
 * keeps every other unit test of the same code and a quick end-to-end file per utility.
 */
export const WHOLE_SUITE_ONLY = {
  'test/e2e/image.test.ts': 'builds and runs the container image (minutes; Node 26 leg only)',
  'test/e2e/production.test.ts': 'a clean copy of the checkout installed with npm ci (minutes)',
  'test/e2e/rolling-restart.test.ts': 'three nodes behind nginx and HAProxy, each restarted under traffic',
  'test/e2e/redis-failover.test.ts':
    'a Sentinel group (primary, replica, three sentinels) failed over under traffic',
  'test/e2e/socket-activation.test.ts':
    'three socket-activated instances on Redis and S3 behind nginx, one restarted under traffic (src/activation.test.ts keeps the descriptor take-over in the fast tier)',
  'test/e2e/fleet.test.ts':
    'two groups of two instances; Redis stopped for 20 s and frozen for 12 s, an instance killed',
  'test/e2e/s3-incomplete-uploads.test.ts': 'a single-node Ceph (monitor, OSD, radosgw) started for one case',
  'test/e2e/faults.test.ts': 'kill -9 during uploads in a loop, a restart after each',
  'test/e2e/connection-flood.test.ts': '1000 slow connections against a 600-descriptor limit',
  'test/e2e/diagram-bombs.test.ts': 'layout bombs in every engine for 20 s beside a bystander',
  'test/e2e/plantuml-bombs.test.ts': 'PlantUML bombs (timeouts, heap exhaustion) for 20 s beside a bystander',
  'test/e2e/fair-renders.test.ts': 'a flood of heavy diagrams and images beside a bystander',
  'test/e2e/proxy-stream.test.ts': '1 GiB through the proxy, memory sampled',
  'test/e2e/proxy-oci.test.ts': "skopeo against Debian's docker-registry behind a token service",
  'test/e2e/proxy-oci-faults.test.ts': 'hostile registries and 16 clients pulling one image',
  'test/e2e/relay-syncthing.test.ts': 'two real Syncthing instances syncing through the relay',
  'test/e2e/prometheus.test.ts': 'a real Prometheus loading the rules and scraping two instances',
  'test/e2e/setup-sh.test.ts': 'setup.sh run, then real git, pip, npm and go through devutil',
  'test/e2e/docs-examples.test.ts': 'every documented download command run with curl and wget',
  'test/e2e/asciidoctor-kroki.test.ts': 'Asciidoctor.js converting a document in every diagram language',
  'test/e2e/offload-proxy-nginx.test.ts': 'two instances behind real nginx compared byte for byte',
  'test/e2e/diagram-editor.test.ts': "real Chromium picking every language in the home page's editor",
  'test/e2e/web.test.ts': 'real Chromium through every home page section, light and dark, three widths',
  'test/e2e/admin.test.ts': 'real Chromium on the admin dashboard after real traffic',
  'test/e2e/admin-oidc.test.ts': 'an OpenID Connect provider and a sign-in in real Chromium',
  'test/e2e/api-docs.test.ts': 'real Chromium on /docs',
  'src/services/diagrams/plantuml/cds.test.ts':
    'waits for class-archive training runs at the lowest CPU priority (minutes on a busy machine)',
  'src/services/diagrams/plantuml/faults.test.ts':
    'PlantUML JVMs timed out, out of heap and killed, one JVM start each',
  'src/services/diagrams/plantuml/broken.test.ts':
    'PlantUML JVMs broken on purpose (a jar with classes removed, its own worker build), up to five JVM starts',
  'src/services/diagrams/kroki/browser.test.ts':
    'the Mermaid Chromium pool: browsers started, crashed, idled out',
  'src/services/diagrams/engines/browser-pool.test.ts': 'the Chromium pool itself: launches, crashes, caps',
  'src/services/diagrams/kroki/mermaid-kinds.test.ts':
    'every Mermaid kind drawn through the Chromium pool the default configuration finds',
  'test/e2e/diagram-isolation.test.ts':
    'the bomb corpus: 28 memory, CPU and output bombs in render processes, then four at once from four addresses',
  'test/e2e/proxy-maven.test.ts': "real Maven resolving a project's dependencies through devutil",
  'src/services/diagrams/kroki/corpus.test.ts':
    "Kroki's 67 sample diagrams in three request shapes each, PlantUML and blockdiag included (minutes)",
};

/**
 * Files whose subject differs between the Node runtimes CI runs (20 and 26): HTTP server internals,
 * streams, worker threads and child processes, TLS, async context, type stripping, the production
 * install. CI's Node 20 leg runs them although the fast tier may leave them out.
 */
export const RUNTIME_SENSITIVE = {
  'test/e2e/production.test.ts':
    'the production install: npm ci --omit=dev and no TypeScript loader on Node 24/26, tsx on Node 20',
  'test/e2e/lifecycle.test.ts':
    'bin/devutil.js registers tsx on Node 20 only; graceful SIGTERM of node:http; the cluster module',
  'test/e2e/cli-npx.test.ts': "npx of the runtime's own npm runs the project's bin (tsx on Node 20)",
  'src/infra/http/drain.test.ts': "node:http's closeIdleConnections differs (Node 26 cut a fresh connection)",
  'src/infra/http/request-bodies.test.ts':
    'request body streams: deadlines, aborts and caps on IncomingMessage',
  'test/e2e/pipelining.test.ts': "llhttp's pipelining and the response back-pressure of node:http",
  'test/e2e/slow-clients.test.ts': "node:http's headersTimeout and requestTimeout checks",
  'test/e2e/connection-flood.test.ts': 'accept() past the descriptor limit (EMFILE) in libuv and node:net',
  'test/e2e/hostile-json.test.ts':
    "JSON nesting against V8's stack depth (Node 20 overflows past ~10k levels)",
  'test/e2e/relay-deadline.test.ts': 'deadlines inside the TLS handshake of node:tls',
  'test/e2e/dual-stack.test.ts':
    'one :: socket for IPv6 and IPv4 (IPv4-mapped peers) and happy eyeballs in clients',
  'test/e2e/tracing.test.ts': 'trace context through AsyncLocalStorage (AsyncContextFrame since Node 24)',
  'src/services/diagrams/engines/process-pool.test.ts':
    'render processes: V8 heap flags, RLIMIT_DATA against what each runtime commits at start (Node 26 reserves more code space), SIGKILL',
  'src/infra/process/bounds.test.ts': "prlimit bounds against the runtime's own start-up commit",
  'src/services/diagrams/engines/d2.test.ts':
    "D2's WebAssembly in a render process started with the runtime's TypeScript loader; exit once the pool closes",
  'src/activation.test.ts': 'a listening socket taken over from a descriptor (LISTEN_FDS) by node:net',
  'src/services/files/tus/tus.test.ts': "a cut PATCH: what the runtime's sockets still deliver after the cut",
  'src/infra/storage/file-read.test.ts':
    'stream back-pressure: pooled buffers reused only after a slow socket took them',
  'test/helpers/process.test.ts': 'child process groups and signals',
  'src/infra/egress/proxy.test.ts':
    "the outbound proxy's CONNECT tunnel: a raw node:net socket, then node:tls over it (tinyproxy)",
  'test/e2e/telegram-clients.test.ts':
    "Telegraf's uploads run on Node 20 only (its multipart body never ends on Node 26's streams)",
};

/**
 * Files that take the machine's cores and disk for minutes: the runner never runs two at once and
 * runs the shortest files beside one (scripts/test-order.js).
 */
export const HEAVY = {
  'test/e2e/image.test.ts': 'podman builds the container image from its base, then runs it',
  'test/e2e/production.test.ts': 'npm ci of a clean copy of the checkout, then the server',
};

/**
 * Files that scripts/test.js never runs in a batch (several small files in one process,
 * scripts/test-batch.js) although they are small: a file that measures its own process's memory,
 * watches which modules its process loads, or changes how the process resolves modules.
 */
export const ALONE = {
  'test/property/routes.test.ts': "the heap's growth over a thousand hostile requests, in its own process",
  'src/services/files/files.test.ts': "the process's RSS while it uploads, in its own process",
  'src/infra/media/sharp.test.ts':
    'a module hook that hides sharp from every later import in its process (test/repo/suite.test.ts: every file with a module hook)',
  'src/infra/http/lazy.test.ts': 'which modules a fresh process has loaded, through a module hook',
  'src/infra/process/idle-gc.test.ts': "its own process's heap before and after a memory-reducing collection",
};

/**
 * Files that scripts/test.js runs with the TypeScript loader (tsx) on Node 20 although it runs the
 * others compiled (scripts/test-compile.js): a file whose subject is the checkout as a user runs it
 * there, or one that cannot run from the compiled copy.
 */
export const RUN_WITH_LOADER = {
  'test/e2e/cli-npx.test.ts': "npx runs the checkout's own bin, which registers tsx on Node 20",
  'test/e2e/production.test.ts':
    "builds the page with web/build.ts, whose esbuild follows the compiled copy's links back to the checkout and finds web/src's modules outside it",
};
