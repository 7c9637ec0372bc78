/** What a job asks of a cluster's capacity. */
import type { PhysicalPlan } from './planner.js';

/** Slots a whole job needs, and what they are made of (for the refusal message). */
export function slotNeed(plan: PhysicalPlan, slotSharing: boolean): { slots: number; detail: string } {
  if (!slotSharing) return { slots: plan.subtasks.length, detail: 'one slot per subtask: --slot-sharing off' };
  const widest = new Map<string, number>();
  for (const t of plan.tasks)
    widest.set(t.slotSharingGroup, Math.max(widest.get(t.slotSharingGroup) ?? 0, t.parallelism));
  const parts = [...widest].map(([g, n], i) => `${i === 0 ? 'slot sharing group ' : ''}'${g}': ${n}`);
  return { slots: [...widest.values()].reduce((a, b) => a + b, 0), detail: parts.join(', ') };
}
