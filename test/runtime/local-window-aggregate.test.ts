// Window pre-aggregation holds a pane's partial counts until a watermark reaches the pane's last
// millisecond, so a key crosses the shuffle once per pane, and nothing is ever behind a watermark that
// could fire a window it belongs to; late records, idleness, barriers and the end still send at once.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { OperatorSpec } from '../../src/plan/index.js';
import type { OperatorContext, Output } from '../../src/runtime/operator.js';
import { HELD_GROUPS_LIMIT, LocalWindowAggregateOperator } from '../../src/runtime/operators/local-window-aggregate.js';
import { TSX } from '../harness/cli.js';

type Seen = { partial: [number, number]; ts: number } | { watermark: number } | { idle: boolean };

/** A pre-aggregation counting numbers by value over sliding windows (size 10, slide 2) or tumbling ones (size 10). */
function preAggregation(
  kind: 'sliding' | 'tumbling' = 'sliding',
  time: 'event' | 'processing' = 'event',
  keyOf: (v: unknown) => unknown = (v) => v,
) {
  const assigner =
    kind === 'sliding' ? { kind, sizeMs: 10, slideMs: 2, offsetMs: 0 } : { kind, sizeMs: 10, offsetMs: 0 };
  const spec = {
    id: 'pre',
    name: 'pre',
    type: 'localWindowAggregate',
    options: { assigner, time, function: 'count' },
  } as unknown as OperatorSpec;
  const seen: Seen[] = [];
  const out: Output = {
    collect: (v, ts) => seen.push({ partial: v as [number, number], ts }),
    emitWatermark: (w) => seen.push({ watermark: w }),
    emitStatus: (idle) => seen.push({ idle }),
  };
  const op = new LocalWindowAggregateOperator();
  op.setup({ spec, fns: { keySelectors: [keyOf] } } as unknown as OperatorContext, out);
  op.open();
  const take = (): Seen[] => seen.splice(0);
  return { op, take };
}

describe('window pre-aggregation', () => {
  test('a pane is held across batches and leaves, one partial per key, when a watermark reaches its last millisecond', () => {
    const { op, take } = preAggregation();
    op.processElement(7, 0);
    op.processElement(7, 1);
    op.endBatch();
    op.processElement(7, 1);
    op.processElement(8, 2); // the next pane, [2, 4)
    op.endBatch();
    assert.deepEqual(take(), [], 'held across batches');
    op.processWatermark(0);
    assert.deepEqual(take(), [{ watermark: 0 }], 'pane [0, 2) is not complete at 0');
    op.processWatermark(1);
    assert.deepEqual(take(), [{ partial: [7, 3], ts: 1 }, { watermark: 1 }], 'pane [0, 2) leaves ahead of watermark 1');
    op.processWatermark(3);
    assert.deepEqual(take(), [{ partial: [8, 1], ts: 2 }, { watermark: 3 }]);
  });

  test('a late record leaves at the end of its batch; idleness, a barrier and the end send what is held', () => {
    const { op, take } = preAggregation();
    op.processWatermark(5);
    take();
    op.processElement(1, 3); // pane [2, 4): the watermark has passed it
    op.processElement(2, 9); // pane [8, 10): on time
    op.endBatch();
    assert.deepEqual(take(), [{ partial: [1, 1], ts: 3 }], 'only the late one');
    op.processStatus(true);
    assert.deepEqual(take(), [{ partial: [2, 1], ts: 9 }, { idle: true }], 'an idle input holds back nothing');
    op.processElement(3, 20);
    op.prepareSnapshot();
    assert.deepEqual(
      take(),
      [{ partial: [3, 1], ts: 20 }],
      'nothing is held across a barrier (no state to checkpoint)',
    );
    op.processElement(4, 30);
    op.finish();
    assert.deepEqual(take(), [{ partial: [4, 1], ts: 30 }]);
  });

  test('in processing time groups are held across batches until the task waits or yields; past the limit of held groups everything leaves at the end of the batch', () => {
    const p = preAggregation('tumbling', 'processing');
    p.op.processElement(1, 100);
    p.op.processElement(1, 200);
    p.op.endBatch();
    p.op.processElement(1, 300);
    p.op.processElement(2, 300);
    p.op.endBatch();
    assert.deepEqual(p.take(), [], 'held while the task runs');
    p.op.beforeWait();
    assert.deepEqual(p.take(), [
      { partial: [1, 3], ts: 300 },
      { partial: [2, 1], ts: 300 },
    ]);
    p.op.beforeWait();
    assert.deepEqual(p.take(), [], 'nothing twice');
    const late = preAggregation('tumbling');
    late.op.processElement(1, 0);
    late.op.beforeWait();
    assert.deepEqual(late.take(), [], 'in event time a pane waits for its watermark, not for the task');

    const e = preAggregation('tumbling');
    for (let k = 0; k <= HELD_GROUPS_LIMIT; k++) e.op.processElement(k, 0);
    e.op.endBatch();
    assert.equal(e.take().length, HELD_GROUPS_LIMIT + 1, 'all of them, at once');
    e.op.processElement(1, 0);
    e.op.endBatch();
    assert.deepEqual(e.take(), [], 'and below the limit held again');
  });

  test('property: whatever the records, batches and watermarks, a watermark leaves only after every record so far of the panes it completes, and the partials sum to the records', () => {
    const step = fc.oneof(
      fc.record({ key: fc.integer({ min: 0, max: 4 }), ts: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ watermark: fc.integer({ min: 0, max: 40 }) }),
      fc.constant('batch' as const),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const { op, take } = preAggregation();
        const arrived = new Map<string, number>();
        const sent = new Map<string, number>();
        const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
        const pane = (ts: number) => ts - (ts % 2);
        const drain = (): Seen[] => {
          const out = take();
          for (const e of out) if ('partial' in e) add(sent, `${e.partial[0]}@${pane(e.ts)}`, e.partial[1]);
          return out;
        };
        let watermark = -Infinity;
        for (const s of steps) {
          if (s === 'batch') op.endBatch();
          else if ('watermark' in s) {
            if (s.watermark <= watermark) continue;
            op.processWatermark((watermark = s.watermark));
            const out = drain();
            assert.deepEqual(out.at(-1), { watermark }, 'the watermark leaves last');
            for (const [k, n] of arrived)
              if (Number(k.split('@')[1]) + 1 <= watermark)
                assert.equal(sent.get(k), n, `pane ${k} complete before watermark ${watermark}`);
          } else {
            op.processElement(s.key, s.ts);
            add(arrived, `${s.key}@${pane(s.ts)}`, 1);
          }
          drain();
        }
        op.finish();
        drain();
        assert.deepEqual([...sent].sort(), [...arrived].sort());
      }),
    );
  });

  test('a pane counted in typed arrays (32-bit integer keys) sends what the object path sends: same partials, order, timestamps', () => {
    const step = fc.oneof(
      fc.record({ key: fc.integer({ min: -3, max: 200 }), ts: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ watermark: fc.integer({ min: 0, max: 40 }) }),
      fc.constantFrom('batch' as const, 'snapshot' as const, 'idle' as const),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300 }), (steps) => {
        // The same records, keyed by the number itself (the typed-array path) and by its string (a Map's).
        const numbers = preAggregation();
        const strings = preAggregation('sliding', 'event', (v) => String(v));
        const asStrings = (seen: Seen[]): unknown[] =>
          seen.map((e) => ('partial' in e ? { partial: [String(e.partial[0]), e.partial[1]], ts: e.ts } : e));
        let watermark = -Infinity;
        for (const s of steps) {
          for (const { op } of [numbers, strings]) {
            if (s === 'batch') op.endBatch();
            else if (s === 'snapshot') op.prepareSnapshot();
            else if (s === 'idle') op.processStatus(true);
            else if ('watermark' in s) {
              if (s.watermark > watermark) op.processWatermark(s.watermark);
            } else op.processElement(s.key, s.ts);
          }
          if (typeof s === 'object' && 'watermark' in s) watermark = Math.max(watermark, s.watermark);
          assert.deepEqual(asStrings(numbers.take()), strings.take());
        }
        numbers.op.finish();
        strings.op.finish();
        assert.deepEqual(asStrings(numbers.take()), strings.take());
      }),
    );
  });

  test('keys outside the typed arrays (-0, fractions, strings) share a pane with integer keys; a late record after its pane left is not lost', () => {
    const { op, take } = preAggregation('tumbling', 'event', (v) => (v as { k: unknown }).k);
    for (const k of [1, -0, 0.5, 'a', 1, -0, 2]) op.processElement({ k }, 3);
    op.processWatermark(9);
    assert.deepEqual(
      take(),
      [
        { partial: [1, 2], ts: 3 },
        { partial: [2, 1], ts: 3 },
        { partial: [-0, 2], ts: 3 },
        { partial: [0.5, 1], ts: 3 },
        { partial: ['a', 1], ts: 3 },
        { watermark: 9 },
      ],
      'integers first, then the others, each in the order they came; -0 kept as it came',
    );
    assert.deepEqual(take(), []);
    op.processElement({ k: 1 }, 4); // late: its pane [0, 10) has left
    op.endBatch();
    assert.deepEqual(take(), [{ partial: [1, 1], ts: 4 }]);
    for (let k = 0; k < 1000; k++) op.processElement({ k }, 12); // a reused table grows
    op.processWatermark(19);
    const out = take();
    assert.equal(out.length, 1001);
    assert.deepEqual(out[999], { partial: [999, 1], ts: 12 });
  });

  test('a count partial is the kind of array the same partial decoded from another process is, so a window fed by both converts neither', () => {
    // V8's own view (a child with --allow-natives-syntax): read from a Float64Array a count was a heap
    // number and its tuple a double array, while a decoded one (an integer column) is a small-integer array.
    const script = resolve(import.meta.dirname, '../fixtures/scripts/partial-elements-kind.ts');
    const result = JSON.parse(
      execFileSync(process.execPath, ['--allow-natives-syntax', '--import', TSX, script], {
        encoding: 'utf8',
        timeout: 60_000,
      }),
    );
    assert.deepEqual(result, { fresh: true, optimized: true, partials: 20 });
  });
});
