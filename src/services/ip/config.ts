// Caller-IP section: the endpoints are cheap, so they are not rate limited unless configured.
import { bool, rate } from '../../infra/schema.ts';

export const ipSection = {
  enabled: bool(true, { doc: 'serve /api/ip and /rest/api/v1/ip' }),
  rateLimit: rate('off', { doc: 'per-client budget for the IP endpoints, e.g. 600/min' }),
};
