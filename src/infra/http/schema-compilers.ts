// Fastify's schema compilers, one set per process: every Fastify instance (a test file builds
// several) reuses the Ajv instance and the validators and serializers already compiled for the
// same schema object, instead of compiling each route's schemas again per instance. A validator is
// compiled on its route's first request, not when the server starts: most routes of a server (and
// nearly all of a test's) are never asked, and Ajv's code generation was a tenth of start-up.
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type ValidatorFactory = NonNullable<Factories['buildValidator']>;
type SerializerFactory = NonNullable<Factories['buildSerializer']>;
type Serializer = (doc: unknown) => string;
/** What Fastify reads of an Ajv validator: the call, its `errors` and (Ajv's mark) `schemaEnv`. */
type Validator = ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };

// @fastify/ajv-compiler pools one Ajv per (external schemas, options); Ajv keeps every schema it
// compiled by object, so a module-level route schema is compiled once per process.
const ajvPool = AjvCompiler();

/** The validators made and not yet asked, each as its compile step (compileAllValidators). */
const pending = new Set<() => unknown>();

const buildValidator = ((externalSchemas, options) => {
  let compiler: ReturnType<typeof ajvPool> | undefined;
  return (route) => {
    let fn: Validator | undefined;
    const compiled = () => {
      if (fn) return fn;
      pending.delete(compiled);
      compiler ??= ajvPool(externalSchemas, options);
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
 * Compiles every validator not compiled yet and returns how many: a schema Ajv refuses throws here
 * (a test calls it after building the whole server) rather than on its route's first request.
 */
export function compileAllValidators(): number {
  const all = [...pending];
  for (const compile of all) compile();
  return all.length;
}

const selectSerializer = SerializerSelector();
/** Per (external schemas, options): the serializer made for each response schema object. */
const serializers = new Map<string, WeakMap<object, Serializer>>();

const buildSerializer: SerializerFactory = (externalSchemas, options) => {
  const compile = selectSerializer(externalSchemas, options);
  const key = JSON.stringify(externalSchemas) + JSON.stringify(options ?? {});
  const cache = serializers.get(key) ?? new WeakMap<object, Serializer>();
  serializers.set(key, cache);
  return (route) => {
    const schema = route.schema as object;
    let fn = cache.get(schema);
    if (!fn) {
      fn = compile(route) as Serializer;
      cache.set(schema, fn);
    }
    return fn;
  };
};

/** Fastify's `schemaController` option: the process's shared compilers. */
export const sharedCompilers: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: { buildValidator, buildSerializer },
};
