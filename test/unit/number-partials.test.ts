// NumberPartials: a pane's integer-keyed partials in typed arrays, in first-come order, reused across panes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { NumberPartials } from '../../src/runtime/operators/number-partials.js';

test('property: NumberPartials finds, appends and resets as a Map of key -> entry in insertion order would', () => {
  const op = fc.oneof(
    fc.record({ key: fc.oneof(fc.integer({ min: -50, max: 50 }), fc.integer()), ts: fc.integer({ min: 0, max: 1e6 }) }),
    fc.constant('reset' as const),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 600 }), (ops) => {
      const t = new NumberPartials();
      const model = new Map<number, { acc: number; ts: number }>();
      for (const o of ops) {
        if (o === 'reset') {
          t.reset();
          model.clear();
          continue;
        }
        let e = t.find(o.key);
        assert.equal(e >= 0, model.has(o.key));
        if (e < 0) e = t.append(o.key, 0, o.ts);
        t.accs[e]! += 1;
        t.stamps[e] = Math.max(t.stamps[e]!, o.ts);
        const m = model.get(o.key) ?? { acc: 0, ts: o.ts };
        model.set(o.key, { acc: m.acc + 1, ts: Math.max(m.ts, o.ts) });
      }
      const held = Array.from({ length: t.size }, (_, e) => [t.keys[e], { acc: t.accs[e], ts: t.stamps[e] }]);
      assert.deepEqual(held, [...model]);
    }),
  );
});
