// Fastify's schema compilers, one set per process: every Fastify instance (a test file builds
// several) reuses the Ajv instance and the validators and serializers already compiled for the
// same schema object, instead of compiling each route's schemas again per instance.
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type SerializerFactory = NonNullable<Factories['buildSerializer']>;
type Serializer = (doc: unknown) => string;

// @fastify/ajv-compiler pools one Ajv per (external schemas, options); Ajv keeps every schema it
// compiled by object, so a module-level route schema is compiled once per process.
const buildValidator = AjvCompiler();

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
