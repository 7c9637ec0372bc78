// The autoscaler's decisions, on the times it is handed (milliseconds of test, no waiting).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  decideAutoscale,
  keepDecision,
  newJobAutoscale,
  recordAutoscale,
  type AutoscalePolicy,
  type AutoscaleSample,
  type AutoscaleState,
} from '../../src/coordinator/autoscaler.js';

const policy: AutoscalePolicy = {
  min: 1,
  max: 8,
  backpressureHigh: 0.5,
  busyHigh: 0.9,
  busyLow: 0.2,
  lagHigh: 10_000,
  sustainMs: 30_000,
  cooldownMs: 60_000,
  maxChangesPerHour: 6,
};
const fresh = (): AutoscaleState => ({ lastChangeAt: -1e9, changes: [] });
const sample = (at: number, o: Partial<AutoscaleSample>): AutoscaleSample => ({
  at,
  parallelism: 2,
  maxBackpressure: 0,
  maxBusy: 0.5,
  sourceLag: 0,
  backpressuredTask: 'window',
  busiestTask: 'window',
  ...o,
});

/** Feed one sample a second from `from` to `to` (inclusive); returns the decisions that were not 'none'. */
function run(state: AutoscaleState, from: number, to: number, o: Partial<AutoscaleSample>, p = policy) {
  const out = [];
  for (let t = from; t <= to; t += 1_000) {
    const d = decideAutoscale(p, state, sample(t, o));
    if (d.action !== 'none') out.push({ at: t, ...d });
  }
  return out;
}

describe('the autoscaler', () => {
  test('scales out (doubling) once backpressure has held for the sustain time, naming the task and how long', () => {
    const d = run(fresh(), 0, 30_000, { maxBackpressure: 0.8 });
    assert.deepEqual(d, [
      {
        at: 30_000,
        action: 'rescale',
        to: 4,
        reason: 'task window backpressured 80% of the time for 30 s: scale out 2 -> 4',
      },
    ]);
  });

  test('a saturated task (busy, not backpressured: it shares its thread with its feeder) also scales out', () => {
    assert.deepEqual(
      run(fresh(), 0, 30_000, { maxBusy: 0.95, busiestTask: 'map' }).map((d) => d.reason),
      ['task map busy 95% of the time for 30 s: scale out 2 -> 4'],
    );
    // Both signals: both named, the pressure first.
    assert.deepEqual(
      run(fresh(), 0, 30_000, { maxBusy: 0.95, busiestTask: 'map', sourceLag: 50_000 }).map((d) => d.reason),
      ['task map busy 95% of the time for 30 s, and sources 50000 records behind their input: scale out 2 -> 4'],
    );
  });

  test('sources lagging behind their input and not catching up scale out; lag that shrinks is watched again', () => {
    assert.deepEqual(
      run(fresh(), 0, 30_000, { sourceLag: 50_000, maxBusy: 0.3 }).map((d) => d.reason),
      ['sources 50000 records behind their input, not catching up for 30 s: scale out 2 -> 4'],
    );
    const s = fresh();
    assert.deepEqual(run(s, 0, 29_000, { sourceLag: 50_000, maxBusy: 0.3 }), []);
    assert.deepEqual(run(s, 30_000, 30_000, { sourceLag: 40_000, maxBusy: 0.3 }), [], 'catching up: no rescale');
    assert.equal(s.signal?.since, 30_000, 'the window starts again');
    assert.equal(run(s, 31_000, 60_000, { sourceLag: 45_000, maxBusy: 0.3 }).at(-1)?.action, 'rescale');
    // A small lag is no signal, and an idle job with a big lag is not scaled in.
    assert.deepEqual(run(fresh(), 0, 40_000, { sourceLag: 500, maxBusy: 0.3 }), []);
    assert.equal(run(fresh(), 0, 40_000, { sourceLag: 50_000, maxBusy: 0.05 })[0]?.reason.includes('scale out'), true);
  });

  test('a signal that lapses starts over', () => {
    const s = fresh();
    assert.deepEqual(run(s, 0, 20_000, { maxBackpressure: 0.8 }), []);
    assert.deepEqual(run(s, 21_000, 21_000, { maxBackpressure: 0.1 }), []);
    assert.deepEqual(run(s, 22_000, 51_000, { maxBackpressure: 0.8 }), []);
    assert.equal(run(s, 52_000, 52_000, { maxBackpressure: 0.8 })[0]?.action, 'rescale');
  });

  test('scales in (halving, not below min) after sustained idleness with no backpressure', () => {
    const d = run(fresh(), 0, 30_000, { parallelism: 5, maxBusy: 0.1, busiestTask: 'map' });
    assert.deepEqual(d, [
      { at: 30_000, action: 'rescale', to: 3, reason: 'no task busier than 10% (map) for 30 s: scale in 5 -> 3' },
    ]);
    assert.deepEqual(
      run(fresh(), 0, 30_000, { parallelism: 8, maxBusy: 0.1 }, { ...policy, min: 6 }).map((d) =>
        'to' in d ? d.to : 0,
      ),
      [6],
    );
    // Idle but backpressured somewhere is not idle.
    assert.deepEqual(run(fresh(), 0, 40_000, { maxBusy: 0.1, maxBackpressure: 0.2 }), []);
  });

  test('holds at its bounds, in its cool-down and past its changes per hour, saying which', () => {
    assert.deepEqual(
      run(fresh(), 0, 30_000, { parallelism: 8, maxBackpressure: 0.9 }).map((d) => [
        d.action,
        'limit' in d ? d.limit : '',
      ]),
      [['hold', 'bound']],
    );
    const cooling: AutoscaleState = { lastChangeAt: 0, changes: [0] };
    const held = run(cooling, 1_000, 31_000, { maxBackpressure: 0.9 });
    assert.equal(held[0]!.action, 'hold');
    assert.match(held[0]!.reason, /, but the last change was 31 s ago \(cool-down 60 s\)$/);
    const busy: AutoscaleState = {
      lastChangeAt: -1e9,
      changes: [-3_000_000, -2_000_000, -1_000_000, -500_000, -100_000, -70_000],
    };
    assert.match(
      run(busy, 0, 30_000, { maxBackpressure: 0.9 })[0]!.reason,
      /, but 6 changes in the last hour is the limit$/,
    );
    // Later on, the oldest is more than an hour old and no longer counts.
    recordAutoscale(busy, 700_000);
    assert.deepEqual(
      busy.changes,
      [-2_000_000, -1_000_000, -500_000, -100_000, -70_000, 700_000],
      'changes older than an hour are forgotten',
    );
  });

  test('a rescale starts the cool-down: the next signal waits for it', () => {
    const s = fresh();
    assert.equal(run(s, 0, 30_000, { maxBackpressure: 0.9 })[0]!.action, 'rescale');
    recordAutoscale(s, 30_000);
    const next = run(s, 31_000, 89_000, { parallelism: 4, maxBackpressure: 0.9 });
    assert.ok(next.every((d) => d.action === 'hold'));
    assert.deepEqual(
      run(s, 90_000, 90_000, { parallelism: 4, maxBackpressure: 0.9 }).map((d) => d.action),
      ['rescale'],
    );
  });

  test('a held signal is recorded once per limit, not every second', () => {
    const a = newJobAutoscale({ min: 1, max: 2 }, { sustainMs: 1_000, cooldownMs: 0, maxChangesPerHour: 6 }, 0);
    assert.equal(keepDecision(a, { at: 1, action: 'hold', limit: 'bound', reason: 'x' }), true);
    assert.equal(keepDecision(a, { at: 2, action: 'hold', limit: 'bound', reason: 'x' }), false);
    assert.equal(keepDecision(a, { at: 3, action: 'hold', limit: 'cooldown', reason: 'y' }), true);
    assert.equal(a.decisions.length, 2);
  });
});
