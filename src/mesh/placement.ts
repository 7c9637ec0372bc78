/**
 * Placement from membership (design record 017): every member computes the same placement from the
 * sorted member set with the coordinator's placement function, so nothing is sent to tell a member its
 * slice. Each member offers the same number of slots: by default just enough for the job (its slot need
 * divided over the members, rounded up), so pipeline instances spread over all of them.
 */
import {
  assignTaskPlacement,
  NotEnoughSlotsError,
  placementSubtasks,
  type PlacementSubtask,
} from '../coordinator/index.js';
import { slotNeed, type PhysicalPlan } from '../plan/index.js';
import { MeshError } from './rendezvous.js';

/** Each member's subtasks, by its position in `members` (sorted exchange addresses). */
export function meshPlacement(
  plan: PhysicalPlan,
  members: readonly string[],
  slotsPerMember?: number,
): PlacementSubtask[][] {
  const need = slotNeed(plan, true);
  const slots = slotsPerMember ?? Math.max(1, Math.ceil(need.slots / members.length));
  let placed: Map<string, PlacementSubtask[]>;
  try {
    placed = assignTaskPlacement(
      placementSubtasks(plan, true),
      members.map((id) => ({ id, freeSlots: slots })),
      slots * members.length,
      need.detail,
    );
  } catch (err) {
    if (!(err instanceof NotEnoughSlotsError)) throw err;
    throw new MeshError(
      `the job needs ${need.slots} slots (${need.detail}) and ${members.length} members of ${slots} slots offer ${slots * members.length}; add members or give each more --slots`,
      { cause: err },
    );
  }
  return members.map((m) => placed.get(m) ?? []);
}
