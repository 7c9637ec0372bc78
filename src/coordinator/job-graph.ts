/**
 * A job's detail as GET /api/v1/jobs/:id shows it beside its summary: the graph (tasks with their chained
 * operators, where each subtask runs and its live metrics; edges with how many of their channels are
 * local pointer passes and how many cross processes), the checkpoint settings it runs with, and the
 * checkpoint in flight. Operator options are left out: they may hold connection strings.
 */
import { networkEdges, subtaskKey } from '../plan/index.js';
import type { JobState } from './job-state.js';
import { taskMetrics, type TaskMetrics } from './task-metrics.js';
import { checkpointTimeoutMs } from './checkpoint-coordinator.js';
import { edgeChannels } from './job-views.js';

export interface JobGraphView {
  tasks: {
    id: string;
    name: string;
    parallelism: number;
    slotSharingGroup: string;
    operators: { id: string; name: string; type: string; keyed: boolean }[];
    /** Where each subtask runs (by index), '' once it has finished. */
    workers: string[];
    metrics: TaskMetrics;
  }[];
  edges: { source: string; target: string; kind: string; channels: { local: number; socket: number } }[];
}

export interface CheckpointSettingsView {
  enabled: boolean;
  checkpointDir: string;
  intervalMs: number;
  retained: number;
  stateBackend: string;
  /** Where keyed state lives: heap or disk (the coordinator's default resolved). */
  stateBackendType: string;
  alignment: string;
  /** Effective: the default's value when none was given. */
  timeoutMs: number;
  minPauseMs: number;
  alignedCheckpointTimeoutMs: number;
  /** -1: any number. */
  tolerableFailedCheckpoints: number;
  maxRestartsFromCheckpoint: number;
  maxRegionRetries: number;
  restoredFrom: string;
  restoredFromCheckpointId: number;
}

export interface JobDetailParts {
  graph: JobGraphView;
  checkpointConfig: CheckpointSettingsView;
  pendingCheckpoint: {
    checkpointId: number;
    kind: 'periodic' | 'savepoint' | 'final';
    startedAt: number;
    acked: number;
    of: number;
  } | null;
}

export function jobDetailParts(j: JobState): JobDetailParts {
  const workerOf = new Map<string, string>();
  for (const t of j.subtasks) if (!t.finished) workerOf.set(subtaskKey(t.taskId, t.index), t.session.id);
  const tasks = j.plan.tasks.map((t) => ({
    id: t.id,
    name: t.name,
    parallelism: t.parallelism,
    slotSharingGroup: t.slotSharingGroup,
    operators: t.operators.map((o) => ({ id: o.id, name: o.name, type: o.type, keyed: o.keyed })),
    workers: Array.from({ length: t.parallelism }, (_, i) => workerOf.get(subtaskKey(t.id, i)) ?? ''),
    metrics: taskMetrics(j, t.id, t.parallelism),
  }));
  // A finished subtask has no worker: its channels are left out.
  const edges = networkEdges(j.plan).map((e) => ({
    source: e.up.id,
    target: e.down.id,
    kind: e.edge.kind,
    channels: edgeChannels(e, workerOf),
  }));
  const c = j.checkpoint;
  const p = j.checkpointing.inFlight;
  return {
    graph: { tasks, edges },
    checkpointConfig: {
      enabled: c.checkpointDir !== '',
      checkpointDir: c.checkpointDir,
      intervalMs: c.intervalMs,
      retained: c.checkpointsRetained,
      stateBackend: c.stateBackendUri,
      stateBackendType: c.stateBackendType,
      alignment: c.alignment,
      timeoutMs: checkpointTimeoutMs(c),
      minPauseMs: c.minPauseMs,
      alignedCheckpointTimeoutMs: c.alignedTimeoutMs,
      tolerableFailedCheckpoints: c.tolerableFailures,
      maxRestartsFromCheckpoint: c.maxRestartsOnWorkerLoss,
      maxRegionRetries: c.maxRestarts,
      restoredFrom: c.restoreFromDir,
      restoredFromCheckpointId: c.restoreFromCheckpointId,
    },
    pendingCheckpoint: p
      ? {
          checkpointId: p.id,
          kind: p.savepoint ? 'savepoint' : p.final ? 'final' : 'periodic',
          startedAt: p.startedAt,
          acked: j.subtasks.length - p.pending.size,
          of: j.subtasks.length,
        }
      : null,
  };
}
