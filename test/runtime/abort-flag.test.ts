// A task's batch loop reads cancellation from a flag of one shape, not from the job's AbortSignal
// (each of which has a hidden class of its own): the flag must say what the signal says, at once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { abortFlag, register } from '../../src/runtime/abort-flag.js';

describe('abort flag', () => {
  test('is set as the signal aborts, not before', () => {
    const c = new AbortController();
    const setup = { signal: c.signal };
    const flag = register(setup);
    assert.equal(flag.aborted, false);
    c.abort(new Error('stop'));
    assert.equal(flag.aborted, true);
    assert.equal(abortFlag(setup), flag);
  });

  test('a signal aborted already gives a set flag', () => {
    const c = new AbortController();
    c.abort();
    assert.equal(abortFlag({ signal: c.signal }).aborted, true);
  });

  test('setups of one signal share its flag; an unregistered setup finds it too', () => {
    const c = new AbortController();
    const a = register({ signal: c.signal });
    const b = abortFlag({ signal: c.signal });
    assert.equal(a, b);
    assert.notEqual(abortFlag({ signal: new AbortController().signal }), a);
  });

  test('a composite signal (AbortSignal.any) sets its flag when a source aborts', () => {
    const outer = new AbortController();
    const signal = AbortSignal.any([outer.signal, new AbortController().signal]);
    const flag = register({ signal });
    outer.abort();
    assert.equal(flag.aborted, true);
  });
});
