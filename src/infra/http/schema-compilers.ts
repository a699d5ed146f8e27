// Fastify's schema compilers, one set per process: every Fastify instance (a test file builds
// several) reuses the Ajv instance and the validators and serializers already compiled for the
// same schema object, instead of compiling each route's schemas again per instance. A validator or
// a response serializer is compiled on its route's first use, not when the server starts: most
// routes of a server (and nearly all of a test's) are never asked, and Ajv's and
// fast-json-stringify's code generation was a tenth of start-up. Ajv does not check each route
// schema against the JSON Schema meta-schema when it compiles it (compiling the meta-schema's own
// validator was most of the first request's cost): the route schemas are the code's own constants,
// and compileAllSchemas() checks every one of them (its test runs over the whole server).
// The compilers' own modules (Ajv, fast-json-stringify and theirs: over a hundred files, 30-40 ms
// of CPU loaded by themselves) are loaded by the first compile too, synchronously (Fastify compiles
// inside the request), not when the server starts: the first requests a start gets (health checks,
// the fast lane's answers) mostly need neither. loadCompilers() loads them ahead, for a warm-up.
import { createRequire } from 'node:module';
import type AjvCompilerModule from '@fastify/ajv-compiler';
import type SerializerSelectorModule from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type ValidatorFactory = NonNullable<Factories['buildValidator']>;
type SerializerFactory = NonNullable<Factories['buildSerializer']>;
type Serializer = (doc: unknown) => string;
/** What Fastify reads of an Ajv validator: the call, its `errors` and (Ajv's mark) `schemaEnv`. */
type Validator = ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };

interface Compilers {
  /**
   * @fastify/ajv-compiler pools one Ajv per (external schemas, options); Ajv keeps every schema it
   * compiled by object, so a module-level route schema is compiled once per process.
   */
  ajvPool: ReturnType<typeof AjvCompilerModule>;
  selectSerializer: ReturnType<typeof SerializerSelectorModule>;
}
let compilers: Compilers | undefined;

/** The compiler modules, loaded by the first call (synchronous: both packages are CommonJS). */
export function loadCompilers(): Compilers {
  if (compilers) return compilers;
  const require = createRequire(import.meta.url);
  const ajv = require('@fastify/ajv-compiler') as typeof AjvCompilerModule;
  const fjs = require('@fastify/fast-json-stringify-compiler') as typeof SerializerSelectorModule;
  compilers = { ajvPool: ajv(), selectSerializer: fjs() };
  return compilers;
}

/** The validators and serializers made and not yet asked, each as its compile step (compileAllSchemas). */
const pending = new Set<() => unknown>();
type AjvInstance = {
  validateSchema(schema: object): unknown;
  errorsText(errors?: unknown): string;
  errors?: unknown;
};
type PoolCompiler = ReturnType<Compilers['ajvPool']>;
/** Each compiler of the pool: its Ajv instance and the route schemas it compiled (the meta-schema check). */
const checks = new Map<PoolCompiler, { ajv?: AjvInstance; schemas: Set<object> }>();

const buildValidator = ((externalSchemas, options) => {
  let compiler: PoolCompiler | undefined;
  return (route) => {
    let fn: Validator | undefined;
    const compiled = () => {
      if (fn) return fn;
      pending.delete(compiled);
      let made: AjvInstance | undefined;
      compiler ??= loadCompilers().ajvPool(externalSchemas, {
        ...(options as Parameters<Compilers['ajvPool']>[1] & object),
        customOptions: { ...options?.customOptions, validateSchema: false },
        // The pool calls it once, when it makes the instance for these options.
        onCreate: (ajv: unknown) => {
          (options?.onCreate as ((a: unknown) => void) | undefined)?.(ajv);
          made = ajv as AjvInstance;
        },
      } as Parameters<Compilers['ajvPool']>[1]);
      const check = checks.get(compiler) ?? { schemas: new Set<object>() };
      check.ajv ??= made;
      check.schemas.add(route.schema as object);
      checks.set(compiler, check);
      fn = compiler(route) as Validator;
      return fn;
    };
    pending.add(compiled);
    const lazy = ((data: unknown, ctx?: unknown) => compiled()(data, ctx)) as Validator;
    // Fastify reads both on every request (schemaEnv before the call: Ajv may then replace a
    // root value in the request), so the first read compiles.
    Object.defineProperties(lazy, {
      errors: { get: () => compiled().errors },
      schemaEnv: { get: () => compiled().schemaEnv },
    });
    return lazy;
  };
  // Typed as Ajv's: Fastify reads no more of a validator than Validator above.
}) as ValidatorFactory;

/**
 * Compiles every validator and serializer not compiled yet and checks every route schema given to
 * Ajv against the meta-schema; returns how many it compiled. A schema Ajv, fast-json-stringify or
 * the meta-schema refuses throws here (a test calls it after building the whole server) rather
 * than on its route's first request, or never.
 */
export function compileAllSchemas(): number {
  const all = [...pending];
  for (const compile of all) compile();
  for (const { ajv, schemas } of checks.values()) {
    if (!ajv) continue;
    // Each schema is checked once: a refused one is reported by this call only, so it does not
    // fail the checks of the servers a process builds after it (test files batched in one process).
    for (const schema of schemas) {
      schemas.delete(schema);
      if (ajv.validateSchema(schema) !== true)
        throw new Error(`a route schema is not valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
    }
  }
  return all.length;
}

/** Per (external schemas, options): the serializer made for each response schema object. */
const serializers = new Map<string, WeakMap<object, Serializer>>();

const buildSerializer: SerializerFactory = (externalSchemas, options) => {
  let compile: ReturnType<Compilers['selectSerializer']> | undefined;
  const key = JSON.stringify(externalSchemas) + JSON.stringify(options ?? {});
  const cache = serializers.get(key) ?? new WeakMap<object, Serializer>();
  serializers.set(key, cache);
  return (route) => {
    const schema = route.schema as object;
    let fn = cache.get(schema);
    if (!fn) {
      let made: Serializer | undefined;
      const compiled = () => {
        if (made) return made;
        pending.delete(compiled);
        compile ??= loadCompilers().selectSerializer(externalSchemas, options);
        made = compile(route) as Serializer;
        return made;
      };
      pending.add(compiled);
      fn = (doc) => (made ?? compiled())(doc);
      cache.set(schema, fn);
    }
    return fn;
  };
};

/** Fastify's `schemaController` option: the process's shared compilers. */
export const sharedCompilers: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: { buildValidator, buildSerializer },
};
