// The OpenAPI schemas of the IP routes: their query parameters and the three answer shapes.

const format = {
  type: 'string',
  enum: ['json', 'text'],
  description: 'json (default) or text',
} as const;
const ipParam = {
  type: 'string',
  description: 'look up this address instead of the caller (with scope, country, asn, org)',
} as const;
export const querystring = { type: 'object', properties: { format, ip: ipParam } } as const;

export const DETAILS_ON = ['', '1', 'true', 'yes'];
export const v1Querystring = {
  type: 'object',
  properties: {
    format,
    ip: ipParam,
    details: {
      type: 'string',
      enum: [...DETAILS_ON, '0', 'false', 'no'],
      description:
        '1 adds scope, country, asn and org to data (JSON only), and city, region and timezone where a city database is installed',
    },
  },
} as const;

const nullable = { type: ['string', 'null'] } as const;

/**
 * The address, and with details or ?ip= its scope, country, asn and org; city, region and timezone
 * too where a city database is installed (DEVUTIL_IP_CITY_DB; /readyz says which).
 */
const ipData = {
  type: 'object',
  required: ['ip'],
  properties: {
    ip: { type: 'string' },
    scope: { type: 'string' },
    country: nullable,
    asn: nullable,
    org: nullable,
    city: nullable,
    region: nullable,
    timezone: { type: ['string', 'null'], description: 'IANA name, e.g. Europe/Paris' },
  },
} as const;

export const legacyShape = {
  type: 'object',
  required: ['status', 'msg', 'data', 'version'],
  properties: {
    status: { type: 'integer', enum: [1] },
    msg: { type: 'string' },
    data: ipData,
    version: { type: 'string', pattern: '^V\\d+\\.\\d+\\.\\d+$' },
  },
} as const;

export const v1Shape = {
  type: 'object',
  required: ['status', 'message', 'data'],
  properties: {
    status: { type: 'integer', enum: [1] },
    message: { type: 'string' },
    data: ipData,
  },
} as const;

export const textShape = {
  type: 'string',
  description: 'the bare address and a newline (format=text)',
} as const;
