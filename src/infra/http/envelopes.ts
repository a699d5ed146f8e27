// The error envelopes: the shape each family of routes answers a failure in
// (docs/protocols/public-interface.md §8). Kept out of errors.ts, which answers in them, so that a
// definition naming its envelope (a proxy ecosystem's) loads no HTTP framework: the configuration
// reads those definitions.
/** An envelope renders a failure for one family of routes. */
export interface Envelope {
  contentType: string;
  /** `headers` are the answer's extra headers (Retry-After), for envelopes that repeat them in the body. */
  body(status: number, message: string, code: string, headers?: Record<string, string | number>): string;
}

export const ENVELOPES = {
  /** file API: {success:false, message} */
  file: {
    contentType: 'application/json; charset=utf-8',
    body: (_s, m) => JSON.stringify({ success: false, message: m }),
  },
  /** legacy IP and message relay: {status:0, msg, data:null} */
  legacy: {
    contentType: 'application/json; charset=utf-8',
    body: (_s, m) => JSON.stringify({ status: 0, msg: m, data: null }),
  },
  /** versioned REST: {status:0, message, data:null} */
  v1: {
    contentType: 'application/json; charset=utf-8',
    body: (_s, m) => JSON.stringify({ status: 0, message: m, data: null }),
  },
  /** proxy, PlantUML, avatar and operations: one line of text */
  text: { contentType: 'text/plain; charset=utf-8', body: (_s, m) => `${m}\n` },
} satisfies Record<string, Envelope>;

export type EnvelopeName = keyof typeof ENVELOPES;
