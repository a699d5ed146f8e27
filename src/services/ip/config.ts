// Caller-IP section: the endpoints are cheap, so they are not rate limited unless configured.
import { bool, duration, list, rate, url } from '../../infra/config/schema.ts';

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
  v4Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an A record, e.g. https://ipv4.example.com (the home page shows the visitor IPv4 address through it); a name, not an address literal',
  }),
  v6Url: url('', {
    optional: true,
    doc: 'this server under a host name with only an AAAA record, e.g. https://ipv6.example.com (the home page shows the visitor IPv6 address through it); a name, not an address literal',
  }),
};
