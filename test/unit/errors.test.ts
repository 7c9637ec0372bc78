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
    assert.equal(
      isFatal(
        markFatal(
          new ConnectorError('postgres sink: cannot connect to PostgreSQL at h:5432/db: connect ECONNREFUSED', {
            transient: true,
          }),
        ),
      ),
      false,
    );
  });
});

test('an HTTP submit that finds the disk full is a 507 naming where uploads and compiled modules go; a refusal keeps its code; anything else is internal', async () => {
  const { submitFailure } = await import('../../src/http/submit-route.js');
  const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
  const f = submitFailure(full);
  assert.equal(f.status, 507);
  assert.equal(f.code, 'CLINK_ERR_STORAGE');
  assert.match(
    f.message,
    /^submit refused: the coordinator could not store the job module \(ENOSPC\): uploads go under .+ \(TMPDIR\) and compiled modules under .+ \(CLINK_CACHE_DIR\); free space there/,
  );
  assert.deepEqual(submitFailure(new ClinkError('CLINK_ERR_NOT_ENOUGH_SLOTS', 'not enough free slots')), {
    status: 409,
    code: 'CLINK_ERR_NOT_ENOUGH_SLOTS',
    message: 'submit refused: not enough free slots',
  });
  assert.equal(submitFailure(new TypeError('x is undefined')).status, 500);
});
