// The link between chained operators is a class per class of the operator it feeds (one receiver class
// per call site), and hands on every record, watermark and status as the single ChainedOutput did.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chainedOutput } from '../../src/runtime/chained-output.js';
import { ChainedOutput, StreamOperator } from '../../src/runtime/operator.js';

class Recorder extends StreamOperator {
  readonly seen: unknown[] = [];
  processElement(value: unknown, timestamp: number): void {
    this.seen.push(['record', value, timestamp]);
  }
  override processWatermark(watermark: number): void {
    this.seen.push(['watermark', watermark]);
  }
  override processStatus(idle: boolean): void {
    this.seen.push(['status', idle]);
  }
}
class OtherRecorder extends Recorder {}

describe('chained output', () => {
  test('hands the next operator its records, watermarks and status', () => {
    const next = new Recorder();
    const out = chainedOutput(next);
    out.collect('a', 5);
    out.emitWatermark(7);
    out.emitStatus(true);
    assert.deepEqual(next.seen, [
      ['record', 'a', 5],
      ['watermark', 7],
      ['status', true],
    ]);
    assert.ok(out instanceof ChainedOutput);
  });

  test('one link class per operator class, its own code', () => {
    const a = chainedOutput(new Recorder());
    const b = chainedOutput(new Recorder());
    const c = chainedOutput(new OtherRecorder());
    assert.equal(a.constructor, b.constructor);
    assert.notEqual(a.constructor, c.constructor);
    // Not ChainedOutput's own methods: a call site shared by every operator class is what this avoids.
    assert.notEqual((a as ChainedOutput).collect, ChainedOutput.prototype.collect);
    assert.notEqual((a as ChainedOutput).collect, (c as ChainedOutput).collect);
  });
});
