// The test tiers scripts/test.js reads (README "Testing"). `npm test`, the fast tier, runs every test
// file but WHOLE_SUITE_ONLY; `npm run test:all` runs them all (CI, on Node 26); CI's leg on the older
// runtime (Node 20) runs the fast tier plus RUNTIME_SENSITIVE. Paths are repository-relative files;
// test/repo/suite.test.ts fails on a name that is gone or has no reason.

/**
 * Slow files whose subject the fast tier covers in part already (unit tests beside the code): whole
 * fleets, floods, real systems that take minutes to start, the container image. Each one's reason.
 */
export const WHOLE_SUITE_ONLY = {
  'test/e2e/image.test.ts': 'builds and runs the container image (minutes on a warm cache)',
  'test/e2e/rolling-restart.test.ts': 'three nodes behind nginx and HAProxy, each restarted under traffic',
  'test/e2e/redis-failover.test.ts':
    'a Sentinel group (primary, replica, three sentinels) failed over under traffic',
  'test/e2e/s3-incomplete-uploads.test.ts': 'a single-node Ceph (monitor, OSD, radosgw) started for one case',
};

/**
 * Files whose subject differs between the Node runtimes CI runs (20 and 26): HTTP server internals,
 * streams, worker threads and child processes, TLS, fetch (undici), type stripping, the production
 * install. CI's Node 20 leg runs them although the fast tier may leave them out.
 */
export const RUNTIME_SENSITIVE = {
  'test/e2e/production.test.ts':
    'the production install: npm ci --omit=dev and no TypeScript loader on Node 24/26, tsx on Node 20',
};
