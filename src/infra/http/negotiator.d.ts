// Types for the part of `negotiator` (it ships none) that infra/http/encoding.ts uses.
declare module 'negotiator' {
  interface Request {
    headers: Record<string, string | string[] | undefined>;
  }
  class Negotiator {
    constructor(request: Request);
    encodings(available?: string[], options?: { preferred?: string[] }): string[];
  }
  export default Negotiator;
}
