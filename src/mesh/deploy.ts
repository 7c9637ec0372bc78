/**
 * A member's own Deploy and PeerUpdate, derived (design record 017): nothing is sent to tell a member
 * its slice or where its subtasks' outputs go. Every member computes the placement from the sorted
 * member set; a subtask's peer is the exchange address of the member running it, whose link carries
 * the channel. The frames are the ones a coordinator would send, so a member runs its slice with the
 * worker's own JobHost.
 */
import type { CheckpointSettings } from '../client/index.js';
import { checkRestore, deploymentTask, type CompletedMarker, type PlacementSubtask } from '../coordinator/index.js';
import type { CompiledJob } from '../loader/index.js';
import { networkEdges, subtaskKey, type PhysicalPlan } from '../plan/index.js';
import { makeMessage, type MessageOf } from '../protocol/index.js';
import { hostPort } from './rendezvous.js';

export interface MemberSlice {
  deploy: MessageOf<'Deploy'>;
  peers: MessageOf<'PeerUpdate'>;
}

export interface SliceOptions {
  jobId: string;
  jobName: string;
  plan: PhysicalPlan;
  specJson: string;
  module: CompiledJob;
  params: Record<string, string>;
  buildParallelism: number;
  checkpoint: CheckpointSettings;
  /** Every member's subtasks, by position (meshPlacement). */
  placement: PlacementSubtask[][];
  members: readonly string[];
  me: number;
  attempt: number;
  restore?: CompletedMarker;
}

export function memberSlice(o: SliceOptions): MemberSlice {
  const mine = o.placement[o.me] ?? [];
  const decision = o.restore
    ? checkRestore(o.restore, o.plan, o.jobName, o.checkpoint.allowNonRestoredState)
    : undefined;
  const deploy = makeMessage('Deploy', {
    jobId: o.jobId,
    jobName: o.jobName,
    specJson: o.specJson,
    tasks: mine.map((st) => deploymentTask(o.plan, st, o.attempt, o.restore, decision)),
    modules: [{ sha256: o.module.sha256, bytes: o.module.code, sourceMap: o.module.sourceMap }],
    checkpoint: o.restore ? { ...o.checkpoint, restoreFromDir: o.restore.stateDir } : o.checkpoint,
    params: JSON.stringify(o.params),
    buildParallelism: o.buildParallelism,
  });
  const memberOf = new Map<string, number>();
  o.placement.forEach((sts, m) => sts.forEach((st) => memberOf.set(subtaskKey(st.taskId, st.index), m)));
  const subtasks = mine.map((st) => {
    const peers: MessageOf<'PeerUpdate'>['subtasks'][number]['peers'] = [];
    for (const { edge, up, down } of networkEdges(o.plan)) {
      if (up.id !== st.taskId) continue;
      for (let d = 0; d < down.parallelism; d++) {
        const { host, port } = hostPort(o.members[memberOf.get(subtaskKey(down.id, d))!]!, 'a member address');
        peers.push({
          downstreamTaskId: down.id,
          downstreamSubtask: d,
          inputIndex: edge.inputIndex,
          host,
          port,
          link: true,
        });
      }
    }
    return { taskId: st.taskId, subtaskIndex: st.index, peers };
  });
  return { deploy, peers: makeMessage('PeerUpdate', { jobId: o.jobId, subtasks, attempt: o.attempt }) };
}
