// A task's event time from its input channels: the least watermark of its active channels, only ever
// advancing; idle channels hold nothing back, all idle makes the task idle, an ended channel is done.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { InputWatermarks } from '../../src/runtime/input-watermarks.js';
import { MAX_WATERMARK } from '../../src/runtime/index.js';

type Seen = { watermark: number } | { idle: boolean };

function inputs(channels: number) {
  const seen: Seen[] = [];
  const time = new InputWatermarks(channels, {
    processWatermark: (watermark) => seen.push({ watermark }),
    processStatus: (idle) => seen.push({ idle }),
  });
  return { time, take: (): Seen[] => seen.splice(0) };
}

describe('input watermarks', () => {
  test('the least of the channels, passed on when it advances', () => {
    const { time, take } = inputs(2);
    time.watermark(0, 10);
    assert.deepEqual(take(), [], 'channel 1 has no watermark yet');
    time.watermark(1, 5);
    assert.deepEqual(take(), [{ watermark: 5 }]);
    time.watermark(1, 20);
    assert.deepEqual(take(), [{ watermark: 10 }]);
    time.watermark(0, 8);
    assert.deepEqual(take(), [], 'an older watermark on a channel changes nothing');
    assert.equal(time.current, 10);
  });

  test('an idle channel holds nothing back; all idle is the task idle, once; one active again resumes it', () => {
    const { time, take } = inputs(2);
    time.watermark(0, 10);
    time.status(1, true);
    assert.deepEqual(take(), [{ watermark: 10 }]);
    time.status(0, true);
    assert.deepEqual(take(), [{ idle: true }]);
    time.status(0, true);
    assert.deepEqual(take(), [], 'already idle');
    time.status(1, false);
    assert.deepEqual(take(), [{ idle: false }], 'channel 1 has no watermark: event time stays, the task is active');
    time.watermark(1, 30);
    assert.deepEqual(take(), [{ watermark: 30 }], 'channel 0 is still idle');
  });

  test('an ended channel holds nothing back; every channel ended is the largest watermark', () => {
    const { time, take } = inputs(2);
    time.watermark(0, 7);
    time.end(1);
    assert.deepEqual(take(), [{ watermark: 7 }]);
    time.end(0);
    assert.deepEqual(take(), [{ watermark: MAX_WATERMARK }]);
  });

  test('channels added later hold event time until their first watermark', () => {
    const { time, take } = inputs(1);
    time.watermark(0, 10);
    take();
    time.addChannels(1);
    time.watermark(0, 20);
    assert.deepEqual(take(), []);
    time.watermark(1, 15);
    assert.deepEqual(take(), [{ watermark: 15 }]);
  });

  test('property: what is passed on only advances, and is the least watermark of the active channels', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('wm' as const), channel: fc.nat(3), ts: fc.integer({ min: 0, max: 100 }) }),
      fc.record({ kind: fc.constant('idle' as const), channel: fc.nat(3), idle: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const { time, take } = inputs(4);
        const latest = [-Infinity, -Infinity, -Infinity, -Infinity];
        const idle = [false, false, false, false];
        let last = -Infinity;
        let taskIdle = false;
        for (const s of steps) {
          if (s.kind === 'wm') {
            time.watermark(s.channel, s.ts);
            latest[s.channel] = Math.max(latest[s.channel]!, s.ts);
          } else {
            time.status(s.channel, s.idle);
            idle[s.channel] = s.idle;
          }
          for (const seen of take()) {
            if ('idle' in seen) {
              assert.notEqual(seen.idle, taskIdle, 'a status only when it changes');
              taskIdle = seen.idle;
            } else {
              assert.ok(seen.watermark > last, 'watermarks only advance');
              last = seen.watermark;
            }
          }
          const active = latest.filter((_, c) => !idle[c]);
          assert.equal(taskIdle, active.length === 0);
          if (active.length > 0) {
            const least = Math.min(...active);
            // What was passed on is the least of the active channels, unless that went back (a channel
            // came back from idle behind the others): event time never goes back.
            if (least > -Infinity) assert.equal(time.current, Math.max(least, last));
          }
        }
      }),
    );
  });
});
