/**
 * InputWatermarks: a task's event time from its input channels, as in Flink. Each channel has its own
 * watermark and may be idle; the task's watermark is the least of its active channels', and only ever
 * advances. An idle channel does not hold the others back; when every channel is idle the task is
 * idle (downstream stops waiting for it), and it is active again as soon as one channel is. A channel
 * that ends counts as active at the largest watermark, so it holds nothing back either.
 */
import { MAX_WATERMARK, NO_TIMESTAMP } from './elements.js';

/** Where the combined watermark and idleness go: the task's first operator. */
export interface WatermarkTarget {
  processWatermark(watermark: number): void;
  processStatus(idle: boolean): void;
}

export class InputWatermarks {
  private readonly watermarks: number[] = [];
  private readonly idle: boolean[] = [];
  private combined = NO_TIMESTAMP;
  private taskIdle = false;

  constructor(
    channels: number,
    private readonly target: WatermarkTarget,
  ) {
    this.addChannels(channels);
  }

  /** The watermark the task has passed on (NO_TIMESTAMP until one is). */
  get current(): number {
    return this.combined;
  }

  /** New channels (a hot rescale's), active and with no watermark yet: they hold event time until theirs comes. */
  addChannels(count: number): void {
    for (let i = 0; i < count; i++) {
      this.watermarks.push(NO_TIMESTAMP);
      this.idle.push(false);
    }
  }

  /** A watermark arrived on `channel`; an older one than the channel's last changes nothing. */
  watermark(channel: number, timestamp: number): void {
    if (timestamp <= this.watermarks[channel]!) return;
    this.watermarks[channel] = timestamp;
    this.recompute();
  }

  /** `channel` became idle or active. */
  status(channel: number, idle: boolean): void {
    this.idle[channel] = idle;
    this.recompute();
  }

  /** `channel` ended: it holds nothing back from now on. */
  end(channel: number): void {
    this.watermarks[channel] = MAX_WATERMARK;
    this.idle[channel] = false;
    this.recompute();
  }

  private recompute(): void {
    let min = MAX_WATERMARK;
    let active = 0;
    for (let c = 0; c < this.watermarks.length; c++) {
      if (this.idle[c]) continue;
      active++;
      if (this.watermarks[c]! < min) min = this.watermarks[c]!;
    }
    if (active === 0) {
      if (!this.taskIdle) {
        this.taskIdle = true;
        this.target.processStatus(true);
      }
      return;
    }
    if (this.taskIdle) {
      this.taskIdle = false;
      this.target.processStatus(false);
    }
    if (min > this.combined) {
      this.combined = min;
      this.target.processWatermark(min);
    }
  }
}
