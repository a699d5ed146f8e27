export declare const WHOLE_SUITE_ONLY: Record<string, string>;
export declare const RUNTIME_SENSITIVE: Record<string, string>;
export declare const HEAVY: Record<string, string>;
export declare const RUN_WITH_LOADER: Record<string, string>;
export declare const ALONE: Record<string, string>;
