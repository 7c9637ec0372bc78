/**
 * The state a deploy's subtasks resume from: each reads its own snapshot from the checkpoint directory
 * the Deploy names or, restored at another parallelism, the earlier subtasks' snapshots it covers
 * (runtime/rescale.ts says which).
 */
import { readFile } from 'node:fs/promises';
import { subtaskKey, type TaskSpec } from '../plan/index.js';
import type { MessageOf } from '../protocol/index.js';
import { rescaleInputs, type RestoreSnapshot, type SubtaskSnapshot } from '../runtime/index.js';
import { decodeStateFileSliced, subtaskStateFile } from '../state/index.js';

/** A deployed subtask, given its restore state here. */
export interface RestoringSubtask {
  task: TaskSpec;
  index: number;
  restore?: RestoreSnapshot;
}

export async function loadRestoreState(
  deploy: MessageOf<'Deploy'>,
  subtasks: readonly RestoringSubtask[],
): Promise<void> {
  const dir = deploy.checkpoint.restoreFromDir;
  for (const st of subtasks) {
    const t = deploy.tasks.find((x) => x.taskId === st.task.id && x.subtaskIndex === st.index);
    if (!t || t.restoreCheckpointId === 0) continue;
    const read = async (index: number): Promise<SubtaskSnapshot> => {
      const file = subtaskStateFile(dir, subtaskKey(st.task.id, index));
      return (await decodeStateFileSliced(await readFile(file), file)) as SubtaskSnapshot;
    };
    if (t.restoreParallelism === 0) {
      st.restore = await read(st.index);
      continue;
    }
    const from = t.restoreParallelism;
    const parts = new Map<number, SubtaskSnapshot>();
    for (const i of rescaleInputs(from, st.task, st.index)) parts.set(i, await read(i));
    st.restore = { rescaledFrom: from, parts };
  }
}
