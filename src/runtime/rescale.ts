/**
 * A restore at another parallelism (docs/design/016-rescale.md). A checkpoint holds one snapshot per
 * subtask of the layout it was taken at; subtask s of a task now at p' reads the snapshots of:
 *
 * - keyed state: every earlier subtask whose key-group range overlaps s's (the backend keeps only s's groups);
 * - operator state (a sink's pending commits, collected chunks, a watermark assigner's progress): the
 *   earlier subtasks i with i mod p' = s, round-robin as Flink's ListState, so each part lands once;
 * - a source's positions: all of them, for the connector's rescale() to divide;
 * - records in flight at an unaligned checkpoint: those of a keyed input by key group, as keyed state;
 *   the rest as operator state, whole per earlier subtask.
 */
import { keyGroupOf, KeyGroupRange, MAX_PARALLELISM, normalizeKey, type TaskSpec } from '../plan/index.js';
import { decodeRecordBatch } from '../protocol/index.js';
import type { StreamOperator } from './operator.js';
import type { SubtaskSnapshot } from './subtask-runner.js';

/** What a subtask restored at another parallelism is given: the snapshots it reads, by earlier subtask index. */
export interface RescaledSnapshot {
  /** The parallelism the checkpoint was taken at. */
  rescaledFrom: number;
  parts: ReadonlyMap<number, SubtaskSnapshot>;
}

export type RestoreSnapshot = SubtaskSnapshot | RescaledSnapshot;

export function isRescaled(r: RestoreSnapshot): r is RescaledSnapshot {
  return (r as RescaledSnapshot).rescaledFrom !== undefined;
}

/** The earlier subtasks whose operator state subtask `index` of `parallelism` takes over (i mod p' = index). */
export function assignedSubtasks(from: number, parallelism: number, index: number): number[] {
  const out: number[] = [];
  for (let i = index; i < from; i += parallelism) out.push(i);
  return out;
}

/** The earlier subtasks whose key groups overlap those of subtask `index` of `parallelism`. */
export function overlappingSubtasks(
  from: number,
  parallelism: number,
  index: number,
  maxParallelism = MAX_PARALLELISM,
): number[] {
  const mine = KeyGroupRange.forSubtask(index, parallelism, maxParallelism);
  const out: number[] = [];
  for (let i = 0; i < from; i++) {
    const r = KeyGroupRange.forSubtask(i, from, maxParallelism);
    if (r.size > 0 && mine.size > 0 && r.start <= mine.end && mine.start <= r.end) out.push(i);
  }
  return out;
}

/** Which earlier subtasks' snapshots subtask `index` of `task` reads: all for a source task, else overlapping and assigned. */
export function rescaleInputs(from: number, task: TaskSpec, index: number): number[] {
  if (task.inputs.length === 0) return Array.from({ length: from }, (_, i) => i);
  return [
    ...new Set([
      ...overlappingSubtasks(from, task.parallelism, index),
      ...assignedSubtasks(from, task.parallelism, index),
    ]),
  ].sort((a, b) => a - b);
}

/** One operator's view of a rescaled restore (see StreamOperator.restoreRescaled). */
export interface RescaledParts {
  /** Its state in the snapshots of the earlier subtasks whose key groups overlap this subtask's. */
  overlapping: unknown[];
  /** Its state in the snapshots of the earlier subtasks this one takes over, and their indexes. */
  assigned: unknown[];
  assignedIndexes: number[];
  /** The parallelism the checkpoint was taken at. */
  from: number;
}

/** Hand each chained operator its parts of a rescaled restore, one after another. */
export async function restoreRescaled(
  operators: readonly StreamOperator[],
  restore: RescaledSnapshot,
  index: number,
  parallelism: number,
): Promise<void> {
  const from = restore.rescaledFrom;
  const overlapping = overlappingSubtasks(from, parallelism, index);
  const assignedIndexes = assignedSubtasks(from, parallelism, index);
  const partOf = (i: number, op: number): unknown => restore.parts.get(i)?.operators[op];
  for (const [o, op] of operators.entries()) {
    await op.restoreRescaled({
      overlapping: overlapping.map((i) => partOf(i, o)),
      assigned: assignedIndexes.map((i) => partOf(i, o)),
      assignedIndexes,
      from,
    });
  }
}

/** Every earlier subtask's source position, by index (undefined where a snapshot had none). */
export function sourcePositions(restore: RescaledSnapshot): unknown[] {
  return Array.from({ length: restore.rescaledFrom }, (_, i) => restore.parts.get(i)?.source);
}

/** Records to replay before anything new, for the operator input they feed. */
export interface ReplayedBatch {
  input: number;
  values: unknown[];
  timestamps: number[];
}

/**
 * The records that were in flight to this subtask at the unaligned checkpoint it restores: its own, or
 * at another parallelism those that would have come to it (a keyed input's by key group, per `inputKeys`).
 */
export function replayInflight(
  restore: RestoreSnapshot,
  o: {
    task: TaskSpec;
    index: number;
    inputKeys?: readonly (((value: unknown) => unknown) | undefined)[];
  },
): ReplayedBatch[] {
  const decode = (input: number, batch: Uint8Array): ReplayedBatch => ({ input, ...decodeRecordBatch(batch) });
  if (!isRescaled(restore)) return (restore.inflight ?? []).map((b) => decode(b.input, b.batch));
  const out: ReplayedBatch[] = [];
  const { parallelism } = o.task;
  const mine = KeyGroupRange.forSubtask(o.index, parallelism, MAX_PARALLELISM);
  const from = restore.rescaledFrom;
  for (const i of overlappingSubtasks(from, parallelism, o.index))
    for (const b of restore.parts.get(i)?.inflight ?? []) {
      const key = o.inputKeys?.[b.input];
      if (!key) continue;
      const all = decode(b.input, b.batch);
      const kept: ReplayedBatch = { input: b.input, values: [], timestamps: [] };
      all.values.forEach((v, r) => {
        const group = keyGroupOf(normalizeKey(key(v)), MAX_PARALLELISM);
        if (!mine.contains(group)) return;
        kept.values.push(v);
        kept.timestamps.push(all.timestamps[r]!);
      });
      if (kept.values.length > 0) out.push(kept);
    }
  for (const i of assignedSubtasks(from, parallelism, o.index))
    for (const b of restore.parts.get(i)?.inflight ?? [])
      if (!o.inputKeys?.[b.input]) out.push(decode(b.input, b.batch));
  return out;
}
