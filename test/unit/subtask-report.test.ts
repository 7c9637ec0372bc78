// What a worker reports for a subtask that ended: ok only without an error or a cancel, a one-line reason
// (user code keeps its original stack), the loss of a peer and fatality told apart, collect() capped.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClinkError, markFatal, PeerLostError } from '../../src/errors.js';
import { decodeCollected } from '../../src/protocol/index.js';
import { MAX_COLLECTED_BYTES } from '../../src/runtime/index.js';
import { subtaskReport, type EndedSubtask } from '../../src/worker/subtask-report.js';

const ended = (over: Partial<EndedSubtask> = {}): EndedSubtask => ({
  task: { id: 't' },
  index: 1,
  collected: {},
  cancelled: false,
  runner: { recordsIn: 5, recordsOut: 3 },
  ...over,
});

describe('subtask report', () => {
  test('a clean end: ok, its counts and what it collected', () => {
    const r = subtaskReport(ended({ collected: { out: [1, 2] } }));
    assert.deepEqual(
      { ...r, collected: decodeCollected(r.collected) },
      {
        taskId: 't',
        subtaskIndex: 1,
        ok: true,
        error: '',
        recordsIn: 5,
        recordsOut: 3,
        collected: { out: [1, 2] },
        peerLost: false,
        fatal: false,
      },
    );
  });

  test('cancelled says so; a lost peer and a fatal error are told apart', () => {
    assert.deepEqual(
      [subtaskReport(ended({ cancelled: true })).ok, subtaskReport(ended({ cancelled: true })).error],
      [false, 'cancelled'],
    );
    const lost = subtaskReport(ended({ error: new PeerLostError('data link to w2 closed') }));
    assert.deepEqual([lost.ok, lost.error, lost.peerLost, lost.fatal], [false, 'data link to w2 closed', true, false]);
    const fatal = subtaskReport(ended({ error: markFatal(new Error('no such connector')) }));
    assert.deepEqual([fatal.peerLost, fatal.fatal], [false, true]);
  });

  test("user code's error keeps the original stack", () => {
    const cause = new Error('boom');
    const r = subtaskReport(ended({ error: new ClinkError('CLINK_ERR_USER_CODE', 'map threw', { cause }) }));
    assert.match(r.error, /^map threw\n\ncaused by: Error: boom\n\s+at /);
  });

  test('collect() above the cap fails the subtask and sends nothing', () => {
    const st = ended({ collected: { out: ['x'.repeat(MAX_COLLECTED_BYTES + 1)] } });
    const r = subtaskReport(st);
    assert.equal(r.ok, false);
    assert.match(r.error, /above the \d+-byte cap; write large results to a sink/);
    assert.equal(r.collected.length, 0);
    assert.equal((st.error as ClinkError).code, 'CLINK_ERR_CONNECTOR');
  });
});
