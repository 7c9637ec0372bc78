/**
 * JSON schemas of the HTTP API's replies and parameters, one place for fastify (validation and fast
 * serialisation) and the OpenAPI document at /api/v1/openapi.json. Objects allow properties beyond those
 * listed (`open`), so a field added to a view is never dropped by the serialiser before its schema says so.
 */
import type {
  AutoscaleRecord,
  CheckpointFailure,
  JobRescale,
  JobRestart,
  JobRetry,
  JobView,
} from '../coordinator/index.js';
import { CHECKPOINT_FAILURE_REASONS } from '../metrics/index.js';
import { JOB_STATES } from '../protocol/index.js';

type Schema = Record<string, unknown>;
type OptionalKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

const open = (
  properties: Record<string, Schema>,
  required: string[] = Object.keys(properties),
  description?: string,
): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: true,
  ...(description ? { description } : {}),
});
/**
 * The schema of the TypeScript type T (a view the API serves): a property for each field of T, required
 * exactly where T requires it. A field added to T does not compile until its schema is written here.
 */
const shaped = <T>(
  properties: { [K in keyof T]-?: Schema },
  optional: { [K in OptionalKeys<T>]: true },
  description?: string,
): Schema => {
  const optionalKeys = new Set(Object.keys(optional));
  return open(
    properties,
    Object.keys(properties).filter((k) => !optionalKeys.has(k)),
    description,
  );
};
const str = (description?: string): Schema => ({ type: 'string', ...(description ? { description } : {}) });
const int = (description?: string): Schema => ({ type: 'integer', ...(description ? { description } : {}) });
const num = (description?: string): Schema => ({ type: 'number', ...(description ? { description } : {}) });
const bool = (description?: string): Schema => ({ type: 'boolean', ...(description ? { description } : {}) });
const list = (items: Schema, description?: string): Schema => ({
  type: 'array',
  items,
  ...(description ? { description } : {}),
});
const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });

/** Every error reply: a stable code from docs/errors.md and a message saying what to do. */
export const ErrorReply = open({ code: str('a CLINK_ERR_* code (docs/errors.md)'), message: str() }, [
  'code',
  'message',
]);

const Restart = shaped<JobRestart>(
  {
    at: int(),
    deployedAt: int(),
    cause: str(),
    restoredFrom: int('the checkpoint it resumed from (0: the beginning)'),
    attempt: int(),
  },
  {},
);
const Rescale = shaped<JobRescale>(
  {
    requestedAt: int(),
    at: int(
      'when the job stopped (drain and replan: its checkpoint completed; in place: the cutover checkpoint was triggered)',
    ),
    deployedAt: int(),
    runningAt: int('when it ran again (absent until it does)'),
    changes: list(str(), '<task> <from> -> <to>'),
    restoredFrom: int('the checkpoint it took and restored from'),
    attempt: int(),
    cause: str('who asked (a client, the HTTP API, the autoscaler and why)'),
    mode: {
      type: 'string',
      enum: ['drain-and-replan', 'hot-cutover'],
      description: 'every task redeployed, or only the changed ones replaced in place',
    },
  },
  { runningAt: true },
);
const Retry = shaped<JobRetry>(
  {
    at: int(),
    deployedAt: int(),
    subtask: str('<task>#<index>'),
    workerId: str(),
    cause: str(),
    retry: int(),
    subtasks: int('subtasks re-run (the failover region)'),
    attempt: int(),
  },
  {},
);

export const JobSummary = shaped<JobView>(
  {
    jobId: str(),
    name: str(),
    state: { type: 'string', enum: JOB_STATES },
    startedAt: int('ms since the epoch'),
    runningAt: int(),
    finishedAt: int(),
    durationMs: int(),
    error: str(),
    parallelism: int(),
    sourceRecords: int('records its sources have read'),
    sinkRecords: int('records its sinks have written'),
    edges: open({
      local: int('channels inside one worker (pointer passes)'),
      socket: int('channels across processes'),
    }),
    subtasks: list(
      open({ taskId: str(), index: int(), workerId: str(), attempt: int(), finished: bool(), error: str() }, [
        'taskId',
        'index',
        'workerId',
        'attempt',
        'finished',
      ]),
    ),
    restarts: list(Restart, 'restarts from a checkpoint, with their causes'),
    rescales: list(Rescale, 'rescales (in place or by drain and replan), newest last'),
    autoscaler: open({
      min: int(),
      max: int(),
      decisions: list(
        shaped<AutoscaleRecord>(
          {
            at: int(),
            action: { type: 'string', enum: ['rescale', 'hold'] },
            limit: str('for a hold: bound, cooldown or rate'),
            reason: str(),
            outcome: str('for a rescale: rescaled, or why it was refused'),
          },
          { limit: true, outcome: true },
        ),
        'newest last',
      ),
    }),
    retries: list(Retry, 'region retries (jobs without checkpoints)'),
    guarantee: open({
      level: { type: 'string', enum: ['at-most-once', 'at-least-once', 'exactly-once'] },
      limitedBy: str('the source or sink that limits it, or empty'),
    }),
    checkpointsCompleted: int('checkpoints (of every kind) it has completed'),
    lastCheckpointId: int('the latest completed checkpoint (0: none yet)'),
    commits: open(
      {
        confirmedThrough: int(
          'every checkpoint up to this one has had its commits confirmed by its sinks (0: none yet)',
        ),
        owed: list(int(), 'completed checkpoints whose commits are not confirmed yet'),
      },
      ['confirmedThrough', 'owed'],
    ),
    lastCheckpointFailure: shaped<CheckpointFailure>(
      {
        checkpointId: int(),
        reason: {
          type: 'string',
          enum: [...CHECKPOINT_FAILURE_REASONS],
          description:
            'expired, declined (a subtask could not snapshot), finalize_failed (its COMPLETED marker) or switched_to_unaligned (taken again unaligned: a worker too old to convert it in place)',
        },
        detail: str('what happened'),
        at: int(),
      },
      {},
    ),
  },
  { runningAt: true, finishedAt: true, error: true, autoscaler: true, lastCheckpointFailure: true },
);

const TaskMetrics = open({
  recordsIn: int(),
  recordsOut: int(),
  recordsInPerSecond: int(),
  recordsOutPerSecond: int(),
  backpressure: num('share of the last interval its busiest subtask waited for room downstream, 0 to 1'),
  busy: num('share of the last interval its busiest subtask spent working (not waiting for input or room), 0 to 1'),
  lagRecords: int(
    "a source task's records not yet read from its external system (Kafka: partition ends minus positions)",
  ),
  stateExpired: int('keyed state values (map entries, list elements) removed as their TTL ran out'),
  watermark: nullable(num('the least watermark of its subtasks, ms')),
  reporting: int('subtasks with a report'),
  measured: int('subtasks with two reports (rates, backpressure and busy are measured over them)'),
});

const JobGraph = open({
  tasks: list(
    open({
      id: str(),
      name: str('its chained operators, e.g. source -> map'),
      parallelism: int(),
      slotSharingGroup: str(),
      operators: list(open({ id: str(), name: str(), type: str(), keyed: bool() })),
      workers: list(str(), 'the worker of each subtask by index ("" once finished)'),
      metrics: TaskMetrics,
    }),
  ),
  edges: list(
    open({
      source: str('task id'),
      target: str('task id'),
      kind: str('FORWARD, HASH, REBALANCE or BROADCAST'),
      channels: open({ local: int(), socket: int() }),
    }),
  ),
});

const CheckpointSettings = open({
  enabled: bool(),
  checkpointDir: str(),
  intervalMs: int(),
  retained: int(),
  stateBackend: str(),
  stateBackendType: str(),
  alignment: str(),
  timeoutMs: int(),
  minPauseMs: int(),
  alignedCheckpointTimeoutMs: int(),
  tolerableFailedCheckpoints: int(),
  maxRestartsFromCheckpoint: int(),
  maxRegionRetries: int(),
  restoredFrom: str(),
  restoredFromCheckpointId: int(),
});

export const JobDetail = {
  ...JobSummary,
  properties: {
    ...(JobSummary.properties as Record<string, Schema>),
    graph: JobGraph,
    checkpointConfig: CheckpointSettings,
    pendingCheckpoint: nullable(open({ checkpointId: int(), kind: str(), startedAt: int(), acked: int(), of: int() })),
  },
  description: 'a job; graph, checkpointConfig and pendingCheckpoint are absent for a job a previous leader recorded',
};

export const JobList = open({ jobs: list(JobSummary) });

export const CheckpointList = open({
  checkpoints: list(
    open({
      checkpointId: int(),
      kind: { type: 'string', enum: ['periodic', 'savepoint', 'final'] },
      alignment: { type: 'string', enum: ['aligned', 'unaligned'] },
      durationMs: int(),
      stateBytes: int(),
      alignmentMs: int(),
      startDelayMs: int(),
      inflightBytes: int(),
      completedAtMs: int(),
      subtasks: {
        type: 'object',
        description: "each subtask's part, by '<task>#<index>'",
        additionalProperties: open({
          ackMs: int(),
          startDelayMs: int(),
          alignmentMs: int(),
          stateBytes: int(),
          inflightBytes: int(),
          unaligned: bool(),
        }),
      },
    }),
  ),
});

const Departed = open({
  workerId: str(),
  session: int(),
  state: { type: 'string', enum: ['lost', 'retired'] },
  cause: str('the verdict, e.g. heartbeat timeout'),
  at: int(),
});

export const WorkerList = open({
  workers: list(
    open({
      workerId: str(),
      session: int(),
      slotsTotal: int(),
      slotsFree: int(),
      slotsUsed: int(),
      address: str('the control connection, host:port'),
      dataHost: str(),
      httpPort: int(),
      runtime: str(),
      protocolVersion: int('the cluster protocol it speaks'),
      registeredAt: int(),
      lastSeenMsAgo: int(),
      subtasks: list(str(), '<jobId>/<task>#<index> of what runs on it'),
      lastEnded: nullable(open({ session: int(), state: str(), cause: str(), at: int() })),
    }),
  ),
  slotsTotal: int(),
  slotsFree: int(),
  departed: list(Departed, 'sessions that ended, newest last: lost by a verdict, or retired'),
});

export const WorkerSelf = open({
  workerId: str(),
  state: { type: 'string', enum: ['connected', 'reconnecting', 'closing'] },
  session: int(),
  epoch: int(),
  coordinator: str('host:port of the coordinator this session registered with'),
  dataPort: int(),
  jobDataPorts: list(int(), 'the data ports its job threads listen on (where the subtasks they run take channels)'),
  slots: int(),
  lastError: nullable(open({ message: str(), at: int() })),
});

export const Health = open({ status: str(), role: str() }, ['status', 'role']);
export const ConfigReply = open({ role: str() }, ['role']);
export const ConnectorList = open({ connectors: list({ type: 'object', additionalProperties: true }) });
export const ActionReply = open({ ok: bool(), message: str() }, ['ok', 'message']);
export const SavepointReply = open({ ok: bool(), message: str(), path: str() }, ['ok', 'message', 'path']);

export const RescaleBody = {
  type: 'object',
  properties: {
    parallelism: {
      type: 'integer',
      minimum: 1,
      description: "the job's new parallelism (operators without their own)",
    },
    operators: {
      type: 'object',
      additionalProperties: { type: 'integer', minimum: 1 },
      description: "operators' own parallelism, by uid",
    },
    mode: {
      type: 'string',
      enum: ['auto', 'hot', 'replan'],
      default: 'auto',
      description:
        'hot: replace only the tasks that change while the rest run on (refused when none would); replan: drain and replan; auto: hot when it can',
    },
  },
  additionalProperties: false,
};
export const RescaleReply = open(
  {
    ok: bool(),
    message: str(),
    changes: list(str(), '<task> <from> -> <to>'),
    checkpointId: int('the checkpoint it restored from'),
    pauseMs: int('from the job stopping to it running again (hot: the tasks beside the replaced ones)'),
    mode: { type: 'string', enum: ['drain-and-replan', 'hot-cutover'] },
  },
  ['ok', 'message', 'changes', 'checkpointId', 'pauseMs', 'mode'],
);

export const JobIdParams = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 128 } },
  required: ['id'],
};
export const SavepointBody = {
  type: 'object',
  properties: {
    dir: { type: 'string', minLength: 1, description: 'where the savepoint is written' },
    cancel: { type: 'boolean', default: false, description: 'cancel the job once it is written' },
  },
  required: ['dir'],
  additionalProperties: false,
};
