// Types for the plantuml-encoder devDependency (used by tests only; it ships none).
declare module 'plantuml-encoder' {
  export function encode(text: string): string;
  export function decode(encoded: string): string;
  const _default: { encode: typeof encode; decode: typeof decode };
  export default _default;
}
