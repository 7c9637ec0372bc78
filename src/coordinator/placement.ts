/**
 * Placement: which worker runs each subtask, and what it costs in slots.
 *
 * Slots are shared as in Flink: a slot holds one subtask of each task of a slot sharing group (one
 * pipeline instance), so a job needs, per group, as many slots as its widest task; `--slot-sharing off`
 * charges one slot per subtask instead. Subtasks that share an index form a pipeline instance (joined
 * by forward edges) and are placed together on one worker, so their forward edges are pointer passes.
 * Instances are spread: each goes to the worker with the most free slots that can take it whole (ties
 * by worker id), since a worker runs each job's subtasks on one thread and a second worker is a second
 * core. The same plan on the same free slots places the same way every time. An instance larger than
 * any worker's free slots is split (by slot, never a slot across workers); running out of slots
 * altogether is a refusal, never a partial placement.
 */
import { ClinkError } from '../errors.js';
import { subtaskKey, type PhysicalPlan } from '../plan/index.js';

export interface PlacementSubtask {
  taskId: string;
  index: number;
  /** The slot it shares within its job (`<group>#<index>`). @default its own (`<taskId>#<index>`) */
  slot?: string;
}

export interface PlacementWorker {
  id: string;
  freeSlots: number;
  /** Slots of this job the worker already holds (for a retry beside survivors): placing there costs nothing. */
  holds?: ReadonlySet<string>;
}

export class NotEnoughSlotsError extends ClinkError {
  constructor(
    readonly needed: number,
    readonly free: number,
    readonly total: number,
    /** What the need is made of, e.g. `slot sharing group 'default': 8, 'sinks': 8`. */
    readonly detail = '',
  ) {
    super(
      'CLINK_ERR_NOT_ENOUGH_SLOTS',
      `not enough free slots: the job needs ${needed}${detail ? ` (${detail})` : ''}, ${free} of the cluster's ${total} are free`,
    );
  }
}

/** A PlacementPlan: worker id -> the subtasks it runs. */
export type PlacementPlan = Map<string, PlacementSubtask[]>;

export const slotOf = (s: PlacementSubtask): string => s.slot ?? subtaskKey(s.taskId, s.index);

/** The slot sharing group of each task: its operators' (the planner chains only within a group). */
export function slotSharingGroupOf(plan: PhysicalPlan, taskId: string): string {
  return plan.tasks.find((t) => t.id === taskId)?.slotSharingGroup ?? 'default';
}

/** The subtasks of `plan` (or those `keep` selects) as placement units, each naming its slot. */
export function placementSubtasks(
  plan: PhysicalPlan,
  slotSharing: boolean,
  keep: (s: { taskId: string; index: number }) => boolean = () => true,
): PlacementSubtask[] {
  const group = new Map(plan.tasks.map((t) => [t.id, t.slotSharingGroup]));
  return plan.subtasks.filter(keep).map((s) => ({
    taskId: s.taskId,
    index: s.index,
    slot: slotSharing ? `${group.get(s.taskId)}#${s.index}` : subtaskKey(s.taskId, s.index),
  }));
}

export function assignTaskPlacement(
  subtasks: readonly PlacementSubtask[],
  workers: readonly PlacementWorker[],
  totalSlots: number,
  detail = '',
): PlacementPlan {
  const sorted = [...workers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const free = new Map(sorted.map((w) => [w.id, w.freeSlots]));
  const holds = new Map(sorted.map((w) => [w.id, new Set(w.holds ?? [])]));
  // Instance index -> slot -> subtasks.
  const instances = new Map<number, Map<string, PlacementSubtask[]>>();
  for (const s of subtasks) {
    const slots = instances.get(s.index) ?? instances.set(s.index, new Map()).get(s.index)!;
    (slots.get(slotOf(s)) ?? slots.set(slotOf(s), []).get(slotOf(s))!).push(s);
  }
  const cost = (id: string, slots: Iterable<string>): number => {
    let n = 0;
    for (const k of slots) if (!holds.get(id)!.has(k)) n++;
    return n;
  };
  const freeTotal = [...free.values()].reduce((a, b) => a + b, 0);
  const allSlots = new Set(subtasks.map(slotOf));
  const needed = [...allSlots].filter((k) => ![...holds.values()].some((h) => h.has(k))).length;
  if (needed > freeTotal) throw new NotEnoughSlotsError(needed, freeTotal, totalSlots, detail);
  const plan: PlacementPlan = new Map();
  const put = (id: string, slot: string, sts: PlacementSubtask[]): void => {
    const list = plan.get(id) ?? plan.set(id, []).get(id)!;
    for (const s of sts) list.push(s);
    if (holds.get(id)!.has(slot)) return;
    holds.get(id)!.add(slot);
    free.set(id, free.get(id)! - 1);
  };
  const fail = (): never => {
    throw new NotEnoughSlotsError(needed, freeTotal, totalSlots, detail);
  };
  for (const index of [...instances.keys()].sort((a, b) => a - b)) {
    const slots = instances.get(index)!;
    // The worker with the most free slots left after taking the instance whole; ties by id.
    let best: string | undefined;
    let bestLeft = -1;
    for (const id of free.keys()) {
      const left = free.get(id)! - cost(id, slots.keys());
      if (left >= 0 && left > bestLeft) [best, bestLeft] = [id, left];
    }
    if (best !== undefined) {
      for (const [slot, sts] of slots) put(best, slot, sts);
      continue;
    }
    // Split, slot by slot: a slot already held somewhere goes back there, the rest fill what is free.
    for (const [slot, sts] of slots) {
      const id =
        [...free.keys()].find((w) => holds.get(w)!.has(slot)) ??
        [...free.keys()].find((w) => free.get(w)! > 0) ??
        fail();
      put(id, slot, sts);
    }
  }
  return plan;
}
