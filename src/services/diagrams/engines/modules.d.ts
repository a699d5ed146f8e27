// Types for the engine packages that ship none.
declare module 'bytefield-svg' {
  const generate: (source: string) => string;
  export default generate;
}
declare module 'wavedrom' {
  const w: unknown;
  export default w;
}
declare module 'wavedrom/skins/default.js' {
  const skin: unknown;
  export default skin;
}
