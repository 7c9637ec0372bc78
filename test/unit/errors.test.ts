import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { ClinkError, ERROR_CODES, PlanError, UserCodeError } from '../../src/index.js';
import { ConnectorError, isFatal, markFatal } from '../../src/errors.js';

describe('error catalogue', () => {
  test('every error code is documented in docs/errors.md, and every documented code exists', async () => {
    const doc = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const documented = new Set([...doc.matchAll(/`(CLINK_ERR_[A-Z_]+)`/g)].map((m) => m[1]));
    assert.deepEqual([...documented].sort(), Object.keys(ERROR_CODES).sort());
  });

  test('errors from another copy of the SDK are still ClinkErrors (brand, not prototype)', () => {
    const foreign = Object.assign(new Error('from a bundled SDK copy'), { name: 'PlanError', code: 'CLINK_ERR_PLAN' });
    Object.defineProperty(foreign, Symbol.for('clink.error'), { value: true });
    assert.ok(foreign instanceof ClinkError);
    assert.ok(foreign instanceof PlanError);
    assert.ok(!(foreign instanceof UserCodeError));
    assert.ok(!(new Error('plain') instanceof ClinkError));
  });

  test('a failure while a subtask starts is fatal, unless a connector says its system was only unreachable', () => {
    assert.equal(isFatal(markFatal(new ConnectorError("kafka source: topic 'x' does not exist"))), true);
    assert.equal(isFatal(markFatal(new Error('open() threw'))), true);
    assert.equal(isFatal(markFatal(new ConnectorError('postgres sink: cannot connect to PostgreSQL at h:5432/db: connect ECONNREFUSED', { transient: true }))), false);
  });
});
