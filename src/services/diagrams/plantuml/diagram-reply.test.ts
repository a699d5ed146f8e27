import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../../infra/http/errors.ts';
import { httpError } from './diagram-reply.ts';
import { BadDiagram, RenderFailed } from './engine.ts';

describe('plantuml error mapping', () => {
  it('answers an engine exception with 422, never a 500', () => {
    const e = httpError(new RenderFailed('the PlantUML engine failed on this diagram'));
    assert.ok(e instanceof AppError);
    assert.equal(e.status, 422);
  });
  it('answers a syntax error with 400', () => {
    const e = httpError(new BadDiagram('Syntax Error?'));
    assert.ok(e instanceof AppError);
    assert.equal(e.status, 400);
  });
});
