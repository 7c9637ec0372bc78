/**
 * Placement: which worker runs each subtask. Subtasks that share a subtask index form one pipeline
 * instance (joined by forward edges) and are placed together on one worker, so their forward edges are
 * pointer passes; workers are visited in sorted id order, so the same plan places the same way every
 * time. An instance larger than any worker's free slots is split across what is free; running out of
 * slots altogether is a refusal, never a partial placement.
 */
import { ClinkError } from '../errors.js';

export interface PlacementSubtask {
  taskId: string;
  index: number;
}

export interface PlacementWorker {
  id: string;
  freeSlots: number;
}

export class NotEnoughSlotsError extends ClinkError {
  constructor(
    readonly needed: number,
    readonly free: number,
    readonly total: number,
  ) {
    super('CLINK_ERR_NOT_ENOUGH_SLOTS', `not enough free slots: the job needs ${needed}, ${free} of the cluster's ${total} are free`);
  }
}

/** A PlacementPlan: worker id -> the subtasks it runs. */
export type PlacementPlan = Map<string, PlacementSubtask[]>;

export function assignTaskPlacement(subtasks: readonly PlacementSubtask[], workers: readonly PlacementWorker[], totalSlots: number): PlacementPlan {
  const free = new Map([...workers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((w) => [w.id, w.freeSlots]));
  const freeTotal = [...free.values()].reduce((a, b) => a + b, 0);
  if (subtasks.length > freeTotal) throw new NotEnoughSlotsError(subtasks.length, freeTotal, totalSlots);
  const groups = new Map<number, PlacementSubtask[]>();
  for (const s of subtasks) (groups.get(s.index) ?? groups.set(s.index, []).get(s.index)!).push(s);
  const plan: PlacementPlan = new Map();
  const put = (id: string, s: PlacementSubtask): void => {
    (plan.get(id) ?? plan.set(id, []).get(id)!).push(s);
    free.set(id, free.get(id)! - 1);
  };
  for (const index of [...groups.keys()].sort((a, b) => a - b)) {
    const group = groups.get(index)!;
    const whole = [...free].find(([, n]) => n >= group.length);
    if (whole) {
      for (const s of group) put(whole[0], s);
      continue;
    }
    // Split: fill workers in order.
    for (const s of group) put([...free].find(([, n]) => n > 0)![0], s);
  }
  return plan;
}
