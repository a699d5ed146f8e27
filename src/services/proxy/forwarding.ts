// What a proxied request runs through, loaded by the first one rather than at start: forward() with
// the rewrites and the redirect and hash checks it brings, the host policy and the usage subjects.
// The route's gate and the disk cache are built at start; both call forward() from here, one load.
import { lazyImpl } from '../../infra/http/lazy.ts';

export const forwarding = lazyImpl('proxy forwarding', async () => {
  const [{ forward }, { decide }, { subjectsOf }] = await Promise.all([
    import('./forward.ts'),
    import('./policy.ts'),
    import('./subjects.ts'),
  ]);
  return { forward, decide, subjectsOf };
});
