export declare const NATIVE_TS: boolean;
export declare const COMPILED: boolean;
export declare const TS_EXEC_ARGV: string[];
