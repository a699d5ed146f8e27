#!/usr/bin/env node
// `node scripts/test-batch.js FILE...`: several small test files in one process (scripts/test.js
// runs the fast files this way, BATCH in scripts/test-tiers.js). Starting node and loading the
// server's modules cost about 0.8 CPU-s a file on Node 26 and 1.25 on Node 20, more than most small
// files' own tests; in one process the modules load once.
//
// Each file is imported inside a suite named by its path, so what it registers at its top level
// (tests, suites, and before/after/beforeEach/afterEach hooks) belongs to that suite alone: its
// `after` runs when its own tests end, and its `beforeEach` runs for its own tests only (Node's
// `--test-isolation=none` shares top-level hooks across files, so it is not used). The files are
// evaluated one after the other, each in its suite's async context, and their tests then run in
// order, one file after another. The environment is put back as it was after each file's tests.
// A file that fails is named by its suite; an error after all tests ends the batch's process with
// a non-zero code, and scripts/test.js then reports the batch's files as failed together.
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, before, describe } from 'node:test';
import { pathToFileURL } from 'node:url';

let evaluated = Promise.resolve();
for (const file of process.argv.slice(2)) {
  const previous = evaluated;
  let done;
  evaluated = new Promise((resolve) => {
    done = resolve;
  });
  describe(file, async () => {
    // node:test finds a test's suite from the async context it is registered in; awaiting the
    // previous file's evaluation leaves that context, so the import re-enters it.
    const inSuite = AsyncLocalStorage.snapshot();
    await previous;
    let env;
    before(() => {
      env = { ...process.env };
    });
    try {
      await inSuite(() => import(pathToFileURL(file).href));
    } finally {
      done();
    }
    after(() => {
      for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
      Object.assign(process.env, env);
    });
  });
}
