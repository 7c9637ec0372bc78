/** What a job asks of a cluster's capacity, and how far its parallelism can move. */
import { MAX_PARALLELISM } from './keygroups.js';
import type { PhysicalPlan } from './planner.js';

/** Slots a whole job needs, and what they are made of (for the refusal message). */
export function slotNeed(plan: PhysicalPlan, slotSharing: boolean): { slots: number; detail: string } {
  if (!slotSharing) return { slots: plan.subtasks.length, detail: 'one slot per subtask: --slot-sharing off' };
  const widest = new Map<string, number>();
  for (const t of plan.tasks) widest.set(t.slotSharingGroup, Math.max(widest.get(t.slotSharingGroup) ?? 0, t.parallelism));
  const parts = [...widest].map(([g, n], i) => `${i === 0 ? 'slot sharing group ' : ''}'${g}': ${n}`);
  return { slots: [...widest.values()].reduce((a, b) => a + b, 0), detail: parts.join(', ') };
}

/**
 * The parallelisms a rescale can move an operator at `current` to: its integer multiples and divisors
 * (so each new subtask's key groups come from whole old subtasks, or whole old subtasks split evenly),
 * up to `limit` (128 for a keyed operator: there are no more key groups to give).
 */
export function reachableParallelisms(current: number, limit: number = MAX_PARALLELISM): number[] {
  const out: number[] = [];
  for (let p = 1; p <= limit; p++) if (p % current === 0 || current % p === 0) out.push(p);
  return out;
}
