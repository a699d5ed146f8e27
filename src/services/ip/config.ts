// Caller-IP section: the endpoints are cheap, so they are not rate limited unless configured.
import { bool, duration, list, rate, url } from '../../infra/config/schema.ts';

const httpsUrl = (s: string) => (/^https?:\/\/[^\s/?#]+(\/\S*)?$/.test(s) ? null : 'expected an http(s) URL');

export const ipSection = {
  enabled: bool(true, { doc: 'serve /api/ip and /rest/api/v1/ip' }),
  rateLimit: rate('off', { doc: 'per-client budget for the IP endpoints, e.g. 600/min' }),
  countryDb: list([], {
    doc: 'country databases for ?details=1 (.mmdb or ip-range CSV, first match wins); empty = the packaged @ip-location-db/geo-whois-asn-country-mmdb',
  }),
  asnDb: list([], {
    doc: 'network (ASN, organisation) databases for ?details=1 (.mmdb or ip-range CSV); empty = the packaged @ip-location-db/asn',
  }),
  dbRetrySec: duration(60, {
    unit: 's',
    min: 1,
    doc: 'after the databases failed to load, ?details=1 answers 503 this long before the next attempt',
  }),
  reachTargets: list(
    [
      'https://github.com/',
      'https://pypi.org/simple/',
      'https://registry-1.docker.io/v2/',
      'https://huggingface.co/api/models?limit=1',
    ],
    {
      item: httpsUrl,
      doc: 'URLs /rest/api/v1/ip/reach asks (any HTTP answer below 500 counts as reachable); they go out with the proxy egress settings (proxy.resolve, proxy.upstream_ca)',
    },
  ),
  reachTimeoutMs: duration(5000, {
    unit: 'ms',
    min: 100,
    max: 30_000,
    doc: 'deadline of one /ip/reach round',
  }),
  reachReuseSec: duration(10, {
    unit: 's',
    min: 0,
    doc: 'a finished /ip/reach round is the answer for this long (callers meanwhile share it)',
  }),
  reachRateLimit: rate('12/min', { doc: 'per-client budget for /rest/api/v1/ip/reach (off = none)' }),
  v4Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an A record, e.g. https://ipv4.example.com (the home page shows the visitor IPv4 address through it); a name, not an address literal',
  }),
  v6Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an AAAA record, e.g. https://ipv6.example.com (the home page shows the visitor IPv6 address through it); a name, not an address literal',
  }),
};
