// Which completed checkpoints' commits a job's sinks have confirmed (coordinator/commit-ledger.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CommitLedger } from '../../src/coordinator/index.js';

describe('the commit ledger', () => {
  test('a checkpoint is confirmed once every subtask that prepared something has committed it', () => {
    const l = new CommitLedger();
    assert.equal(l.owe(1, ['sink#0', 'sink#1']), false);
    assert.deepEqual(l.owedCheckpoints, [1]);
    assert.equal(l.confirm(1, ['sink#0']), false, 'one of two');
    assert.equal(l.confirmedThrough, 0);
    assert.equal(l.confirm(1, ['sink#1']), true);
    assert.equal(l.confirmedThrough, 1);
    assert.deepEqual(l.owedCheckpoints, []);
    assert.deepEqual(l.record(5), { checkpointId: 1, subtasks: { 'sink#0': 1, 'sink#1': 1 }, confirmedAtMs: 5 });
  });

  test('a checkpoint nobody prepared anything for is confirmed at once', () => {
    const l = new CommitLedger();
    assert.equal(l.owe(3, []), true);
    assert.equal(l.confirmedThrough, 3);
  });

  test('a confirmation of a later checkpoint confirms the earlier ones (a sink commits all it prepared up to it)', () => {
    const l = new CommitLedger();
    l.owe(1, ['sink#0']);
    l.owe(2, ['sink#0']);
    assert.deepEqual(l.owedCheckpoints, [1, 2]);
    assert.equal(l.confirm(2, ['sink#0']), true);
    assert.equal(l.confirmedThrough, 2);
    assert.deepEqual(l.owedCheckpoints, []);
  });

  test('a confirmation of an earlier checkpoint does not confirm a later one', () => {
    const l = new CommitLedger();
    l.owe(1, ['sink#0']);
    l.owe(2, ['sink#0']);
    assert.equal(l.confirm(1, ['sink#0']), true);
    assert.equal(l.confirmedThrough, 1);
    assert.deepEqual(l.owedCheckpoints, [2]);
  });

  test('after a rescale, a later checkpoint its new subtasks confirmed settles what the old ones still owed', () => {
    const l = new CommitLedger();
    l.owe(4, ['sink#0', 'sink#1']);
    l.confirm(4, ['sink#0']);
    // Restored at parallelism 1 from checkpoint 4 (which committed what 4 held), then checkpoint 5 completes.
    l.owe(5, ['sink#0']);
    assert.equal(l.confirm(5, ['sink#0']), true);
    assert.equal(l.confirmedThrough, 5);
    assert.deepEqual(l.owedCheckpoints, []);
  });

  test('a subtask that ended cleanly confirms everything it owed', () => {
    const l = new CommitLedger();
    l.owe(7, ['sink#0', 'sink#1']);
    l.confirm(7, ['sink#1']);
    assert.equal(l.ended('sink#0'), true);
    assert.equal(l.confirmedThrough, 7);
    assert.equal(l.ended('sink#0'), false, 'nothing more to confirm');
  });
});
