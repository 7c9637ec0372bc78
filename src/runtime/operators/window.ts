/**
 * Keyed windows. Tumbling and sliding windows keep one pane per window start holding an accumulator per
 * key, and fire panes in start order as the watermark (or the clock) passes their end. Session windows
 * keep a list of sessions per key and merge those that touch. A window join is the same operator with
 * an accumulator that buffers each side.
 */
import type { Collector, WindowAssigner } from '../../sdk/index.js';
import type { StateTable } from '../../state/index.js';
import { BinaryHeap } from '../../util/index.js';
import { NO_TIMESTAMP } from '../elements.js';
import { KeyedOperator } from './keyed.js';
import {
  convertLegacyPane,
  LEGACY_PANE_PREFIX,
  NUMBER_PANE_PREFIX,
  numberPaneName,
  Pane,
  PANE_PREFIX,
  paneName,
  paneStart,
  paneStarts,
} from './pane.js';
import type { WindowAccumulator } from './window-accumulators.js';
import { sliceable, WindowSlices, type WindowEntry } from './window-slices.js';

interface Session {
  start: number;
  end: number;
  acc: unknown;
  /** Fired, and kept for its allowed lateness. */
  fired?: boolean;
}

/** When a session is due: its firing (at end - 1), or with allowed lateness its cleanup (end - 1 + lateness). */
interface SessionDue {
  at: number;
  end: number;
  nk: unknown;
  kg: number;
  cleanup?: boolean;
}

interface KeySessions {
  key: unknown;
  keyGroup: number;
  sessions: Session[];
}

const SESSIONS = '__sessions';

export class WindowOperator extends KeyedOperator {
  private assigner!: WindowAssigner;
  private processingTime = false;
  private agg!: WindowAccumulator;
  private collector!: Collector<unknown>;
  private emitTimestamp = NO_TIMESTAMP;
  /**
   * Non-merging windows: window start -> its pane (a keyed table of accumulators in the backend). With
   * slices, only windows restored from a snapshot of the per-window layout, which their slices add to.
   */
  private readonly panes = new Map<number, Pane>();
  /** Starts of the windows not yet dropped, ascending. */
  private readonly starts: number[] = [];
  /** A sliding window of counts keeps a pane per slide, which its windows combine (window-slices.ts). */
  private slices: WindowSlices | undefined;
  /** Session windows: a keyed table of each key's sessions, and their ends in firing order. */
  private sessions!: StateTable<KeySessions>;
  private readonly sessionsDue = new BinaryHeap<SessionDue>((a, b) => a.at < b.at);
  /** Records dropped because every window they belong to had fired and passed its allowed lateness. */
  lateRecordsDropped = 0;
  /** Event time: how long a fired window is kept for late records (they re-fire it for their key). */
  private lateness = 0;
  /** Late records go to the 'late' side output instead of being dropped. */
  private lateOutput = false;
  /** Starts of windows that have fired and are kept for their allowed lateness (in the snapshot). */
  private readonly fired = new Set<number>();

  constructor(private readonly makeAccumulator: (op: WindowOperator) => WindowAccumulator) {
    super();
  }

  override async open(): Promise<void> {
    this.initKeyedState();
    this.sessions = this.backend.internalTable<KeySessions>(SESSIONS);
    const o = this.ctx.spec.options as {
      assigner: WindowAssigner;
      time: 'event' | 'processing';
      allowedLatenessMs?: number;
      lateDataOutput?: boolean;
    };
    this.assigner = ownAssigner(o.assigner);
    this.processingTime = o.time === 'processing';
    this.lateness = o.allowedLatenessMs ?? 0;
    this.lateOutput = o.lateDataOutput === true;
    const agg = this.makeAccumulator(this);
    // Its input is [key, accumulator] partials of an upstream LocalWindowAggregateOperator: merge them in.
    // A literal of fixed fields, not a spread of `agg`: a spread's result had a hidden class of its own in
    // every job, and each job's deoptimized the window code compiled for the last one (issue 24).
    this.agg =
      this.ctx.spec.options.preAggregated === true
        ? {
            create: agg.create,
            add: (acc, p) => agg.merge(acc, (p as [unknown, unknown])[1]),
            merge: agg.merge,
            emit: agg.emit,
            immutable: agg.immutable,
            numeric: agg.numeric,
          }
        : agg;
    this.collector = { collect: (v) => this.out.collect(v, this.emitTimestamp) };
    const a = this.assigner;
    if (a.kind === 'sliding' && sliceable(agg, a.sizeMs, a.slideMs))
      this.slices = new WindowSlices(this.backend, this.agg, a.sizeMs, a.slideMs);
    await this.openUdf(this.ctx.fns.udf as { open?: () => void } | undefined);
  }

  processElement(value: unknown, timestamp: number): void {
    this.add(value, timestamp, 0);
  }

  override processElement2(value: unknown, timestamp: number): void {
    this.add(value, timestamp, 1);
  }

  private add(value: unknown, timestamp: number, input: number): void {
    this.setKeyOf(value, input);
    let ts = timestamp;
    if (this.processingTime) ts = this.ctx.time.now();
    else if (ts === NO_TIMESTAMP) {
      throw this.userError(
        new Error(
          `an event-time window got a record with no timestamp: call assignTimestamps(...) upstream, ` +
            `or use window(assigner, { time: 'processing' })`,
        ),
      );
    }
    let added: boolean;
    try {
      added =
        this.assigner.kind === 'session'
          ? this.addToSession(value, ts, input)
          : this.slices
            ? this.addToSlice(this.slices, value, ts, input)
            : this.addToPanes(value, ts, input);
    } catch (err) {
      throw this.userError(err);
    }
    if (added) return;
    if (this.lateOutput && this.out.collectSide) this.out.collectSide('late', value, timestamp);
    else this.lateRecordsDropped++;
  }

  /** Add a record to each window it belongs to; false when every one of them is gone (the record is late). */
  private addToPanes(value: unknown, ts: number, input: number): boolean {
    const a = this.assigner as Exclude<WindowAssigner, { kind: 'session' }>;
    const size = a.sizeMs;
    const slide = a.kind === 'sliding' ? a.slideMs : size;
    const lastStart = paneStart(ts, a.offsetMs, slide);
    let added = false;
    for (let start = lastStart; start > ts - size; start -= slide) {
      // A window is gone once the watermark passes its end and its allowed lateness.
      if (!this.processingTime && start + size - 1 + this.lateness <= this.currentWatermark) continue;
      added = true;
      let pane = this.panes.get(start);
      if (!pane) {
        pane = this.paneAt(start);
        this.panes.set(start, pane);
        this.insertStart(start);
        if (this.processingTime) this.scheduleFire(start + size);
      }
      const { currentKey: key, currentNormalizedKey: nk, currentKeyGroup: kg } = this.backend;
      const acc = pane.add(kg, nk, key, value, input);
      // A late record within the allowed lateness: the window fires again for this key, with the update.
      if (this.lateness > 0 && (this.fired.has(start) || start + size - 1 <= this.currentWatermark)) {
        this.fired.add(start);
        this.emit(acc, key, nk, kg, start, start + size);
      }
    }
    return added;
  }

  /** Add a record to the slice holding it; false when every window holding that slice is gone (the record is late). */
  private addToSlice(slices: WindowSlices, value: unknown, ts: number, input: number): boolean {
    const { sizeMs: size, slideMs: slide, offsetMs } = this.assigner as Extract<WindowAssigner, { kind: 'sliding' }>;
    const t = paneStart(ts, offsetMs, slide);
    // The last window holding slice t starts at t.
    if (!this.processingTime && t + size - 1 + this.lateness <= this.currentWatermark) return false;
    let slice = slices.get(t);
    if (!slice) {
      slice = slices.at(t);
      for (let start = t; start > t - size; start -= slide) {
        if (!this.processingTime && start + size - 1 + this.lateness <= this.currentWatermark) continue;
        if (this.insertStart(start) && this.processingTime) this.scheduleFire(start + size);
      }
    }
    const { currentKey: key, currentNormalizedKey: nk, currentKeyGroup: kg } = this.backend;
    slice.add(kg, nk, key, value, input);
    if (this.lateness === 0) return true;
    // A late record within the allowed lateness: each fired window holding it fires again for this key.
    for (let start = t; start > t - size; start -= slide) {
      if (start + size - 1 + this.lateness <= this.currentWatermark) continue;
      if (!this.fired.has(start) && start + size - 1 > this.currentWatermark) continue;
      this.fired.add(start);
      this.emit(slices.keyInWindow(start, this.panes.get(start), kg, nk), key, nk, kg, start, start + size);
    }
    return true;
  }

  /** Every key's accumulator in the window starting at `start`. */
  private forEachInWindow(start: number, fn: WindowEntry): void {
    if (this.slices) this.slices.forEachInWindow(start, this.panes.get(start), fn);
    else this.panes.get(start)!.forEach(fn);
  }

  /** The pane of a window start over its tables in the backend (made when absent). */
  private paneAt(start: number): Pane {
    const numbers = this.agg.numeric === true ? this.backend.internalNumberTable(numberPaneName(start)) : undefined;
    return new Pane(this.backend.internalTable(paneName(start)), numbers, this.agg);
  }

  /** Add a window start in order; false when it is there already. */
  private insertStart(start: number): boolean {
    const s = this.starts;
    let i = s.length;
    while (i > 0 && s[i - 1]! > start) i--;
    if (s[i - 1] === start) return false;
    s.splice(i, 0, start);
    return true;
  }

  /** Add a record to its key's sessions; false when its session is past firing and its allowed lateness (it is late). */
  private addToSession(value: unknown, ts: number, input: number): boolean {
    const gap = (this.assigner as { gapMs: number }).gapMs;
    let start = ts;
    let end = ts + gap;
    if (!this.processingTime && end - 1 + this.lateness <= this.currentWatermark) return false;
    const nk = this.backend.currentNormalizedKey;
    const kg = this.backend.currentKeyGroup;
    let ks = this.sessions.get(kg, nk);
    if (!ks) this.sessions.set(kg, nk, (ks = { key: this.backend.currentKey, keyGroup: kg, sessions: [] }));
    let acc = this.agg.add(this.agg.create(), value, input);
    const kept: Session[] = [];
    for (const s of ks.sessions) {
      // Windows that touch merge, as in Flink: [1, 5) and [5, 9) become [1, 9).
      if (s.start <= end && s.end >= start) {
        start = Math.min(start, s.start);
        end = Math.max(end, s.end);
        acc = this.agg.merge(s.acc, acc);
      } else kept.push(s);
    }
    const merged: Session = { start, end, acc };
    kept.push(merged);
    ks.sessions = kept;
    if (!this.processingTime && end - 1 <= this.currentWatermark) {
      // Late, within the allowed lateness: the session fires now for this key, and is kept until its cleanup.
      merged.fired = true;
      this.emit(acc, ks.key, nk, kg, start, end);
    }
    this.sessionsDue.push(this.dueOf(merged, nk, kg));
    if (this.processingTime) this.scheduleFire(end);
    return true;
  }

  /** What a session waits for next: its firing, or once fired its cleanup after the allowed lateness. */
  private dueOf(s: Session, nk: unknown, kg: number): SessionDue {
    return s.fired === true
      ? { at: s.end - 1 + this.lateness, end: s.end, nk, kg, cleanup: true }
      : { at: s.end - 1, end: s.end, nk, kg };
  }

  private scheduleFire(end: number): void {
    this.ctx.time.schedule(end, () => this.fireUpTo(end - 1));
  }

  protected override onWatermark(watermark: number): void {
    if (!this.processingTime) this.fireUpTo(watermark);
  }

  /** Fire every window whose last millisecond is <= `time`. */
  private fireUpTo(time: number): void {
    if (this.assigner.kind === 'session') {
      for (let top = this.sessionsDue.peek(); top && top.at <= time; top = this.sessionsDue.peek()) {
        this.sessionsDue.pop();
        const ks = this.sessions.get(top.kg, top.nk);
        const i = ks ? ks.sessions.findIndex((s) => s.end === top.end) : -1;
        if (i < 0) continue; // merged into a longer session since
        const s = ks!.sessions[i]!;
        // A cleanup finds its session fired; a firing finds it not yet fired (else it fired late, at once).
        if ((top.cleanup === true) !== (s.fired === true)) continue;
        if (top.cleanup !== true) {
          this.emit(s.acc, ks!.key, top.nk, top.kg, s.start, s.end);
          if (this.lateness > 0) {
            s.fired = true;
            this.sessionsDue.push(this.dueOf(s, top.nk, top.kg));
            continue;
          }
        }
        ks!.sessions.splice(i, 1);
        if (ks!.sessions.length === 0) this.sessions.delete(top.kg, top.nk);
      }
      return;
    }
    const size = this.assigner.sizeMs;
    // Fire each window the time has passed the end of (once); drop it once it is past its lateness too.
    for (const start of this.starts) {
      if (start + size - 1 > time) break;
      if (this.fired.has(start)) continue;
      this.forEachInWindow(start, (acc, key, nk, kg) => this.emit(acc, key, nk, kg, start, start + size));
      if (this.lateness > 0) this.fired.add(start);
    }
    while (this.starts.length > 0 && this.starts[0]! + size - 1 + this.lateness <= time) {
      const start = this.starts.shift()!;
      this.panes.delete(start);
      this.fired.delete(start);
      this.backend.dropInternalTable(paneName(start));
      this.backend.dropInternalTable(numberPaneName(start));
    }
    this.slices?.dropUpTo(time, this.lateness);
  }

  private emit(acc: unknown, key: unknown, normalizedKey: unknown, keyGroup: number, start: number, end: number): void {
    this.emitTimestamp = end - 1;
    this.backend.setCurrentKeyUnchecked(key, normalizedKey, keyGroup);
    try {
      this.agg.emit(acc, key, { start, end }, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  protected override snapshotOwn(): unknown {
    // Panes and sessions are backend tables: the backend's snapshot holds them.
    // With slices, which windows are not dropped yet cannot be told from the tables: a slice is in windows that are.
    return {
      lateRecordsDropped: this.lateRecordsDropped,
      ...(this.fired.size > 0 ? { fired: [...this.fired] } : {}),
      ...(this.slices ? { windows: [...this.starts] } : {}),
    };
  }

  /**
   * Rescaled: late records dropped are counted once (by the subtasks taken over); fired windows are the
   * union (aligned barriers give every subtask the same watermark at a checkpoint, so they agree).
   */
  protected override mergeOwn(overlapping: unknown[], assigned: unknown[]): unknown {
    type Own = { lateRecordsDropped: number; fired?: number[]; windows?: number[] } | undefined;
    const fired = new Set((overlapping as Own[]).flatMap((o) => o?.fired ?? []));
    const windows = new Set((overlapping as Own[]).flatMap((o) => o?.windows ?? []));
    return {
      lateRecordsDropped: (assigned as Own[]).reduce((n, o) => n + (o?.lateRecordsDropped ?? 0), 0),
      ...(fired.size > 0 ? { fired: [...fired] } : {}),
      ...(windows.size > 0 ? { windows: [...windows] } : {}),
    };
  }

  /** After the backend was restored (only this subtask's key groups): index its panes and sessions again. */
  protected override restoreOwn(own: unknown): void {
    // A snapshot from before today's pane layout: its panes are converted (then snapshotted anew).
    for (const [name, legacy] of this.backend.internalTables<unknown>(LEGACY_PANE_PREFIX)) {
      convertLegacyPane(legacy, this.backend.internalTable(paneName(Number(name.slice(LEGACY_PANE_PREFIX.length)))));
      this.backend.dropInternalTable(name);
    }
    for (const start of paneStarts(this.backend, PANE_PREFIX, NUMBER_PANE_PREFIX)) {
      const pane = this.paneAt(start);
      pane.moveIntegerKeysToNumbers();
      if (pane.size === 0) {
        this.backend.dropInternalTable(paneName(start));
        this.backend.dropInternalTable(numberPaneName(start));
        continue;
      }
      this.panes.set(start, pane);
      this.insertStart(start);
      if (this.processingTime) this.scheduleFire(start + (this.assigner as { sizeMs: number }).sizeMs);
    }
    this.sessions.groups.forEach((g, kg) => {
      if (!g) return;
      for (const [nk, ks] of g) {
        for (const s of ks.sessions) {
          this.sessionsDue.push(this.dueOf(s, nk, kg));
          if (this.processingTime) this.scheduleFire(s.end);
        }
      }
    });
    const o = own as { lateRecordsDropped: number; fired?: number[]; windows?: number[] };
    if (this.slices) {
      this.slices.restore();
      for (const start of o.windows ?? []) {
        if (this.insertStart(start) && this.processingTime)
          this.scheduleFire(start + (this.assigner as { sizeMs: number }).sizeMs);
      }
    }
    this.lateRecordsDropped = o.lateRecordsDropped;
    // Windows that fired before the checkpoint do not fire again: a late record updates its key alone.
    for (const start of o.fired ?? [])
      if (this.panes.has(start) || (this.slices && this.starts.includes(start))) this.fired.add(start);
  }

  override finish(): void {
    // Event-time windows fired on the final watermark; processing-time windows fire now, at end of input.
    this.fireUpTo(Number.POSITIVE_INFINITY);
  }

  /** Windows (or sessions) not yet fired. */
  get pendingWindows(): number {
    let n = 0;
    for (const p of this.panes.values()) n += p.size;
    n += this.slices?.size ?? 0;
    for (const g of this.sessions.groups) if (g) for (const ks of g.values()) n += ks.sessions.length;
    return n;
  }

  override async close(): Promise<void> {
    try {
      await this.closeUdf(this.ctx.fns.udf as { close?: () => void } | undefined);
    } finally {
      await super.close();
    }
  }
}

/**
 * The assigner as a literal of this module, one hidden class per kind in every job: the spec's own
 * object is parsed anew for each job, and its class, gone with the last job's, was a new one each time,
 * which deoptimized the window's code on every job a worker ran (issue 24).
 */
function ownAssigner(a: WindowAssigner): WindowAssigner {
  switch (a.kind) {
    case 'tumbling':
      return { kind: 'tumbling', sizeMs: a.sizeMs, offsetMs: a.offsetMs };
    case 'sliding':
      return { kind: 'sliding', sizeMs: a.sizeMs, slideMs: a.slideMs, offsetMs: a.offsetMs };
    case 'session':
      return { kind: 'session', gapMs: a.gapMs };
  }
}
