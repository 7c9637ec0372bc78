/**
 * Every message of the cluster protocol, declared once. Kinds are grouped by direction:
 * worker -> coordinator 1-7, client -> coordinator 10-15 (and CancelJob 103), coordinator -> client
 * 20-23, coordinator -> worker 100-112, worker -> worker (the data plane) 200-204. Every coordinator ->
 * worker message carries the sender's epoch as a tail (0 = unfenced), so a node built before fencing
 * decodes it as 0; fields added later follow it.
 */
import {
  bool,
  bytes,
  checkFieldOrder,
  enumOf,
  f64,
  field,
  i32,
  list,
  str,
  string,
  struct,
  tail,
  u16,
  u32,
  u64,
  type Fields,
  type ValuesOf,
} from './schema.js';
import { JOB_STATES } from './job-states.js';
import { MAX_REGISTER_STRING_BYTES } from './wire.js';

export type Direction =
  | 'worker->coordinator'
  | 'coordinator->worker'
  | 'client->coordinator'
  | 'coordinator->client'
  | 'both'
  | 'worker->worker';

export interface MessageDef<F extends Fields = Fields> {
  readonly kind: number;
  readonly direction: Direction;
  readonly fields: F;
  readonly doc: string;
}

function message<F extends Fields>(kind: number, direction: Direction, doc: string, fields: F): MessageDef<F> {
  return { kind, direction, fields, doc };
}

/** The coordinator's fencing epoch, the last field of every coordinator -> worker message. */
const epoch = tail(u64, 0, 'epoch of the coordinator that sent it; 0 = unfenced (no HA)');
const protocolVersion = tail(u32, 1, 'the protocol this peer speaks (absent = 1)');
const minCompatible = tail(u32, 1, 'the oldest protocol this peer talks to (absent = 1)');

/** How a job's checkpoint barriers align (design record 023): the wire's enum, and every setting's choices. */
export const ALIGNMENT_MODES = ['aligned', 'unaligned', 'adaptive'] as const;
export type AlignmentMode = (typeof ALIGNMENT_MODES)[number];

/**
 * Where a job's keyed state lives (design record 024): on the heap of its job threads, or on disk (LMDB)
 * with a cache in front. 'default': the coordinator's --default-state-backend-type decides.
 */
export const STATE_BACKEND_TYPES = ['heap', 'disk'] as const;
export type StateBackendType = (typeof STATE_BACKEND_TYPES)[number];

export const CheckpointConfig = struct('CheckpointConfig', {
  checkpointDir: field(string, 'where checkpoints go; empty disables checkpointing'),
  intervalMs: field(u64, 'period of checkpoint triggers; 0 disables periodic checkpoints'),
  restoreFromDir: field(string, 'a checkpoint directory to restore from; empty starts fresh'),
  restoreFromCheckpointId: field(u64, 'the checkpoint in restoreFromDir to restore'),
  maxRestartsOnWorkerLoss: field(i32, '-1 = automatic (self-heal when checkpointing, else fail fast)'),
  alignment: field(enumOf(ALIGNMENT_MODES), 'barrier alignment'),
  stateBackendUri: field(string, "base of the job's state; empty means checkpointDir"),
  checkpointsRetained: tail(u32, 1, 'completed checkpoints kept; older ones are deleted (absent = 1)'),
  maxRestarts: tail(
    i32,
    -1,
    "retries of each failed subtask's failover region in a job without checkpoints; -1 = the coordinator's default",
  ),
  allowNonRestoredState: tail(
    bool,
    false,
    'restore even though the checkpoint holds state for operators the job no longer has (that state is dropped)',
  ),
  allowDuplicatesOnFallback: tail(
    bool,
    false,
    'a restore may fall back past a damaged checkpoint whose commits transactional sinks may have made visible (they are written again); the job is then at-least-once',
  ),
  timeoutMs: tail(u64, 0, 'a checkpoint not complete within this is aborted; 0 = max(10 s, 10 intervals)'),
  minPauseMs: tail(u64, 0, 'the least time from the end of one checkpoint to the start of the next'),
  tolerableFailures: tail(
    i32,
    -1,
    'consecutive failed checkpoints (expired, declined, not finalized) tolerated; one more restarts the job; -1 = any number',
  ),
  alignedTimeoutMs: tail(
    u64,
    0,
    'with alignment adaptive or unaligned: a periodic checkpoint starts aligned and, not complete within this, becomes unaligned; 0 = unaligned from the start',
  ),
  stateBackendType: tail(
    enumOf(['default', ...STATE_BACKEND_TYPES] as const),
    'default',
    "where keyed state lives: heap or disk; default = the coordinator's default (a worker reads it as heap)",
  ),
});

export const JobModule = struct('JobModule', {
  sha256: field(str(64), 'hex SHA-256 of the bundled job module'),
  bytes: field(bytes, 'the module; empty when only referring to a module the receiver holds'),
  sourceMap: tail(bytes, new Uint8Array(0), "the module's source map, shipped beside it (empty with a reference)"),
});

export const DeploymentTask = struct('DeploymentTask', {
  taskId: field(string, 'the task (chain head operator id)'),
  subtaskIndex: field(u32),
  parallelism: field(u32),
  chainJson: field(string, 'the chained operators, as JSON'),
  keyGroupStart: field(u32, 'first key group this subtask owns'),
  keyGroupEnd: field(u32, 'last key group this subtask owns (inclusive)'),
  restoreCheckpointId: field(u64, '0 = start fresh'),
  attempt: tail(u32, 0, 'restart attempt this deploy belongs to'),
  restoreParallelism: tail(
    u32,
    0,
    "the task's parallelism in the restored checkpoint when it differs (a rescaled restore); 0 = the same",
  ),
});

export const OperatorParallelism = struct('OperatorParallelism', {
  operatorId: field(string, 'the operator id (its uid)'),
  parallelism: field(u32),
});

export const EdgePort = struct('EdgePort', {
  inputIndex: field(u32, 'which input of the downstream subtask'),
  upstreamTaskId: field(string),
  upstreamSubtask: field(u32),
  port: field(u16, 'the port bound for that upstream'),
});

export const PeerAddress = struct('PeerAddress', {
  downstreamTaskId: field(string),
  downstreamSubtask: field(u32),
  inputIndex: field(u32),
  host: field(string),
  port: field(u16),
  link: tail(
    bool,
    false,
    "the channel may travel on the sender's data link to host:port (the receiver said it takes links); false: a connection of its own",
  ),
});

export const SubtaskPeers = struct('SubtaskPeers', {
  taskId: field(string),
  subtaskIndex: field(u32),
  peers: field(list(PeerAddress), 'where this subtask sends its output'),
});

export const JobSummary = struct('JobSummary', {
  jobId: field(string),
  name: field(string),
  state: field(string, JOB_STATES.join(', ')),
  startedAtMs: field(u64),
  completed: field(bool),
  error: tail(string, ''),
  sourceRecords: tail(u64, 0, 'records its sources have read'),
  sinkRecords: tail(u64, 0, 'records its sinks have written'),
  parallelism: tail(u32, 0),
  checkpointsCompleted: tail(u32, 0, 'checkpoints (of every kind) it has completed'),
  lastCheckpointId: tail(u64, 0, "the latest completed checkpoint's id; 0 = none yet"),
  restarts: tail(u32, 0, 'restarts from a checkpoint'),
  lastRestartCause: tail(string, '', "the latest restart's cause; empty = none"),
  retries: tail(u32, 0, 'region retries (jobs without checkpoints)'),
});

export const JobProgress = struct('JobProgress', {
  jobId: field(string),
  sourceRecords: field(u64),
  sinkRecords: field(u64),
});

export const SubtaskProgress = struct('SubtaskProgress', {
  jobId: field(string),
  taskId: field(string),
  subtaskIndex: field(u32),
  recordsIn: field(u64, 'records its chain read (a source: produced)'),
  recordsOut: field(u64, 'records it handed downstream (a task ending in a sink: the sink wrote)'),
  backpressuredMs: field(u64, 'time spent waiting for room downstream since it started'),
  watermark: field(f64, 'the last watermark it emitted (-Infinity: none yet)'),
  idleMs: tail(u64, 0, 'time spent waiting for input (a source: for its reader) since it started'),
  lagRecords: tail(
    u64,
    0,
    "a source's records not read yet from its external system (SourceReader.lag); 0 = none or unknown",
  ),
  ageMs: tail(
    u64,
    0,
    "the subtask's age on its worker's clock when these counts were read: rates are taken over two reports' ages, and a report read no later than the last is that report again; 0 = an older worker (rates over the heartbeats' arrival)",
  ),
  stateExpired: tail(
    u64,
    0,
    'keyed state values (map entries, list elements) removed as their TTL ran out, since it started',
  ),
});

export const MESSAGES = {
  // worker -> coordinator
  Register: message(1, 'worker->coordinator', 'a worker introduces itself; the first frame of a worker connection', {
    workerId: field(str(MAX_REGISTER_STRING_BYTES), 'stable worker id'),
    dataHost: field(str(MAX_REGISTER_STRING_BYTES), 'host other workers reach its data ports on'),
    slotCount: tail(u32, 1, 'subtasks it can run at once'),
    httpPort: tail(u16, 0, 'its HTTP port; 0 = none'),
    protocolVersion,
    minCompatibleProtocolVersion: minCompatible,
    runtime: tail(string, '', 'Node major and module ABI, e.g. "node20/abi115"'),
    authToken: tail(
      str(MAX_REGISTER_STRING_BYTES),
      '',
      "the cluster's CLINK_AUTH_TOKEN, when the coordinator requires one; empty = none",
    ),
  }),
  SubtaskListening: message(
    2,
    'worker->coordinator',
    'a subtask bound its inbound ports (sources send none: a ready tick)',
    {
      jobId: field(string),
      taskId: field(string),
      subtaskIndex: field(u32),
      edgePorts: field(list(EdgePort)),
      dataLinks: tail(
        bool,
        false,
        "the subtask's process takes data links on its data port (one connection per peer for every channel); false: a connection per channel",
      ),
    },
  ),
  SubtaskFinished: message(3, 'worker->coordinator', 'a subtask ended, cleanly or not', {
    jobId: field(string),
    taskId: field(string),
    subtaskIndex: field(u32),
    ok: field(bool),
    error: field(string, 'empty when ok'),
    fatal: tail(bool, false, 'deterministic failure: fail the job, do not restart'),
    recordsIn: tail(u64, 0),
    recordsOut: tail(u64, 0),
    collected: tail(bytes, new Uint8Array(0), 'what its collect() sinks gathered: msgpack of { name: values[] }'),
    peerLost: tail(bool, false, 'it failed because a data-plane peer went away: a consequence, not a cause'),
  }),
  Heartbeat: message(4, 'worker->coordinator', 'liveness; answered with HeartbeatAck', {
    seq: field(u64, 'rises by one per heartbeat of a session'),
    sentAtMs: tail(u64, 0),
    runningSubtasks: tail(u32, 0),
    jobs: tail(list(JobProgress), [], 'records read and written by the jobs running on this worker'),
    leaving: tail(
      bool,
      false,
      'the worker is shutting down: the last frame of its session; the coordinator retires the session at once (worker retired: <id> (shutdown)) instead of waiting for the heartbeat timeout',
    ),
    subtasks: tail(
      list(SubtaskProgress),
      [],
      "each running subtask's counts, time backpressured and watermark (the API's per-task rates)",
    ),
  }),
  SubtaskCheckpointed: message(5, 'worker->coordinator', "a subtask's snapshot for a checkpoint is done (or failed)", {
    jobId: field(string),
    checkpointId: field(u64),
    taskId: field(string),
    subtaskIndex: field(u32),
    ok: field(bool),
    error: field(string),
    stateBytes: tail(u64, 0),
    durationMs: tail(u64, 0),
    alignmentMs: tail(u64, 0, 'from the first barrier of this checkpoint at the subtask to the last (0 for a source)'),
    stateSha256: tail(
      string,
      '',
      "SHA-256 (hex) of the state file's body, as its prefix records it; the COMPLETED marker lists it with stateBytes",
    ),
    commits: tail(
      bool,
      false,
      'its snapshot holds what a sink prepared (two-phase commit): it commits when the checkpoint completes, and confirms it (CheckpointCommitted)',
    ),
    fatal: tail(
      bool,
      false,
      'a failed snapshot that would fail again (state that cannot be encoded), not a storage error: a final checkpoint failing so fails the job instead of restarting it',
    ),
    unaligned: tail(bool, false, 'its barriers overtook the records ahead of them'),
    inflightBytes: tail(u64, 0, 'bytes of in-flight records written with its state (an unaligned checkpoint)'),
    startDelayMs: tail(
      u64,
      0,
      'from the worker receiving the TriggerCheckpoint to the subtask taking its first barrier (a source: injecting it)',
    ),
  }),
  RequestFinalCheckpoint: message(
    6,
    'worker->coordinator',
    'a bounded source reached its end and asks for the final checkpoint id',
    {
      jobId: field(string),
      taskId: field(string),
      subtaskIndex: field(u32),
    },
  ),
  BeginRescaleAck: message(7, 'worker->coordinator', 'what a worker armed for a hot rescale', {
    jobId: field(string),
    rescaleId: field(u64),
    ok: field(bool),
    armedSubtasks: field(u32),
    message: field(string),
    phase: tail(
      string,
      'armed',
      "the step answered: 'armed' (BeginRescale), 'rebound' (CutoverRebind), 'released' (CutoverPeerUpdate)",
    ),
  }),

  CheckpointCommitted: message(
    8,
    'worker->coordinator',
    "a worker's subtasks committed a completed checkpoint (sent to a coordinator of protocol 3 or later)",
    {
      jobId: field(string),
      checkpointId: field(u64),
      subtasks: field(
        list(string),
        "'<task>#<index>' of each subtask here that has made visible what it prepared up to this checkpoint",
      ),
      error: tail(
        string,
        '',
        'why a subtask here could not commit (it is not named; the next CommitCheckpoint retries it); empty = none',
      ),
    },
  ),

  // client -> coordinator
  HelloClient: message(
    10,
    'client->coordinator',
    'a client introduces itself; the first frame of a client connection',
    {
      clientName: field(str(MAX_REGISTER_STRING_BYTES)),
      protocolVersion,
      minCompatibleProtocolVersion: minCompatible,
      authToken: tail(
        str(MAX_REGISTER_STRING_BYTES),
        '',
        "the cluster's CLINK_AUTH_TOKEN, when the coordinator requires one; empty = none",
      ),
    },
  ),
  SubmitJob: message(
    11,
    'client->coordinator',
    'submit a job: its plan, its module (or a reference to it) and its settings',
    {
      jobName: field(string),
      specJson: field(string, 'the JobGraphSpec'),
      modules: field(list(JobModule)),
      checkpoint: field(CheckpointConfig),
      params: tail(string, '{}', 'job parameters as a JSON object'),
      sdkFingerprint: tail(string, '', 'fingerprint of the SDK surface the module was built against'),
      buildParallelism: tail(u32, 0, "the parallelism the build function was given; 0 = the spec's default"),
      sdkManifest: tail(
        string,
        '{}',
        'per-file hashes of the SDK declarations the module was built against (JSON), to name what differs',
      ),
      sdkVersion: tail(string, '', 'the clink version the module was built with'),
      autoscaleMin: tail(u32, 0, 'the least parallelism the autoscaler may give the job (--autoscale min..max)'),
      autoscaleMax: tail(u32, 0, 'the most parallelism the autoscaler may give the job; 0 = no autoscaler'),
    },
  ),
  RescaleOperator: message(12, 'client->coordinator', "change one operator's parallelism", {
    jobId: field(string),
    operatorId: field(string),
    parallelism: field(u32),
  }),
  Savepoint: message(13, 'client->coordinator', 'take a savepoint of a running job', {
    jobId: field(string),
    targetDir: field(string),
    cancelAfter: tail(bool, false),
  }),
  ListJobs: message(14, 'client->coordinator', 'list running and recently completed jobs', {
    includeCompleted: tail(bool, true),
  }),
  RescaleJob: message(15, 'client->coordinator', "change a job's parallelism: the whole job's, and operators' own", {
    jobId: field(string),
    parallelism: field(u32, "the job's parallelism; 0 = keep it (only operators change)"),
    operators: tail(list(OperatorParallelism), [], "operators' own parallelism, by id (uid)"),
    mode: tail(
      string,
      'auto',
      "'replan' (drain and replan), 'hot' (replace only the changed tasks, or refuse), 'auto' (hot when it can)",
    ),
  }),

  // coordinator -> client
  SubmitJobAck: message(20, 'coordinator->client', 'the answer to SubmitJob (also to a refused HelloClient)', {
    ok: field(bool),
    jobId: field(string),
    message: field(string),
    missingModuleHashes: tail(list(str(64)), [], 'modules referred to but not held: upload them and submit again'),
    protocolVersion,
    minCompatibleProtocolVersion: minCompatible,
    code: tail(string, '', "a refusal's error code (docs/errors.md); empty = none given"),
  }),
  ListJobsReply: message(21, 'coordinator->client', 'the answer to ListJobs', {
    jobs: field(list(JobSummary)),
  }),
  JobCompleted: message(22, 'coordinator->client', 'a job the client submitted has ended', {
    jobId: field(string),
    ok: field(bool),
    error: field(string),
    state: tail(string, ''),
    durationMs: tail(u64, 0),
    collected: tail(bytes, new Uint8Array(0), "the job's collect() results: msgpack of { name: values[] }"),
  }),
  ClientReply: message(23, 'coordinator->client', 'the answer to CancelJob, RescaleJob, RescaleOperator or Savepoint', {
    requestKind: field(u32, 'the kind of the request answered'),
    ok: field(bool),
    jobId: field(string),
    message: field(string),
    savepointPath: tail(string, ''),
  }),

  // coordinator -> worker
  RegisterAck: message(100, 'coordinator->worker', 'the answer to Register; always the first frame a worker reads', {
    ok: field(bool),
    message: field(string),
    protocolVersion,
    minCompatibleProtocolVersion: minCompatible,
    retryable: tail(bool, false, 'a refusal the worker may retry (capacity, a session still retiring)'),
    session: tail(u64, 0, 'the session this registration opened'),
    epoch,
  }),
  Deploy: message(101, 'coordinator->worker', 'run these subtasks of a job', {
    jobId: field(string),
    jobName: field(string),
    specJson: field(string),
    tasks: field(list(DeploymentTask)),
    modules: field(list(JobModule)),
    checkpoint: field(CheckpointConfig),
    params: tail(string, '{}'),
    epoch,
    buildParallelism: tail(u32, 0, "the parallelism to give the build function; 0 = the spec's default"),
    dataSecret: tail(
      string,
      '',
      "this deploy attempt's secret: its data connections prove they know it (DataHello.mac); empty = none",
    ),
  }),
  PeerUpdate: message(
    102,
    'coordinator->worker',
    "where each of a job's subtasks sends its output; also the go signal",
    {
      jobId: field(string),
      subtasks: field(list(SubtaskPeers)),
      epoch,
      attempt: tail(u32, 0, 'the deploy attempt these subtasks run as'),
    },
  ),
  CancelJob: message(103, 'both', 'cancel a job: a client request to the coordinator, and its broadcast to workers', {
    jobId: field(string),
    reason: tail(string, ''),
    epoch,
    subtasks: tail(
      list(string),
      [],
      "'<task>#<index>' of the subtasks to stop, with their failover regions (a retry); empty = the whole job",
    ),
  }),
  StartJob: message(104, 'coordinator->worker', "start a job's deployed subtasks", {
    jobId: field(string),
    epoch,
  }),
  HeartbeatAck: message(105, 'coordinator->worker', 'the answer to Heartbeat', {
    seq: field(u64, 'the seq of the heartbeat answered'),
    epoch,
  }),
  TriggerCheckpoint: message(106, 'coordinator->worker', 'inject barriers for a checkpoint into the sources', {
    jobId: field(string),
    checkpointId: field(u64),
    timestampMs: field(u64),
    savepointDir: tail(string, '', 'non-empty for a savepoint'),
    epoch,
    unaligned: tail(
      bool,
      false,
      'the barriers overtake the records ahead of them, which are written with the checkpoint (never a savepoint)',
    ),
  }),
  CommitCheckpoint: message(107, 'coordinator->worker', 'a checkpoint completed: two-phase-commit sinks commit it', {
    jobId: field(string),
    checkpointId: field(u64),
    epoch,
  }),
  AbortCheckpoint: message(108, 'coordinator->worker', 'a checkpoint failed: sinks abort what they prepared for it', {
    jobId: field(string),
    checkpointId: field(u64),
    reason: field(string),
    epoch,
  }),
  FinalCheckpointAssigned: message(109, 'coordinator->worker', 'the job-wide final checkpoint id for bounded sources', {
    jobId: field(string),
    checkpointId: field(u64),
    epoch,
  }),
  BeginRescale: message(110, 'coordinator->worker', 'arm a hot rescale at a cutover checkpoint', {
    jobId: field(string),
    rescaleId: field(u64),
    cutoverCheckpointId: field(u64),
    operatorId: field(string, "unused (''): specJson and tasks say what changes"),
    newParallelism: field(u32, 'unused (0): specJson gives every parallelism'),
    epoch,
    specJson: tail(string, '', "the job's graph after the rescale"),
    tasks: tail(list(string), [], 'the tasks it replaces (their parallelism changes); the rest run on'),
  }),
  CutoverRebind: message(111, 'coordinator->worker', 'bind inbound listeners for the post-cutover subtasks', {
    jobId: field(string),
    rescaleId: field(u64),
    tasks: field(list(DeploymentTask), 'unused (empty): the tasks replaced and the graph came with BeginRescale'),
    epoch,
  }),
  CutoverPeerUpdate: message(112, 'coordinator->worker', 'swap held output groups onto the new peers', {
    jobId: field(string),
    rescaleId: field(u64),
    subtasks: field(list(SubtaskPeers)),
    epoch,
  }),
  ConvertCheckpoint: message(
    113,
    'coordinator->worker',
    'an aligned checkpoint past its aligned timeout becomes unaligned: its barriers overtake from here (protocol 4)',
    {
      jobId: field(string),
      checkpointId: field(u64),
      epoch,
    },
  ),

  // worker -> worker: a mesh run's rendezvous (design record 017), on the leader's control port.
  MeshRegister: message(
    210,
    'worker->worker',
    "a mesh member joins the run: the first frame on the leader's control port",
    {
      exchange: field(str(MAX_REGISTER_STRING_BYTES), 'host:port its peers dial it on: its identity in the run'),
      fingerprint: field(string, "SHA-256 (hex) of its job's topology shape"),
      shapeJson: field(
        string,
        'the topology shape hashed (module, key groups, tasks, edges), so a difference can be named',
      ),
      protocolVersion,
    },
  ),
  MeshMembers: message(
    211,
    'worker->worker',
    'the leader to each member once every one has registered: who runs, and what',
    {
      members: field(list(string), 'every exchange address, sorted: a member is its position'),
      fingerprint: field(string),
      shapeJson: field(string),
      restoreCheckpointId: tail(
        u64,
        0,
        "the completed checkpoint every member resumes from (the run's own with --restart, or --restore-from-dir's); 0 = from the start",
      ),
      attempt: tail(u32, 0, 'the run attempt: one more at each rendezvous of a restarted run'),
      restoreDir: tail(
        string,
        '',
        'the marker directory holding restoreCheckpointId (every member reaches it at this path)',
      ),
      checkpointJson: tail(
        string,
        '',
        "the leader's checkpoint settings (JSON), which every member runs with; empty = each its own",
      ),
    },
  ),
  MeshRefused: message(
    212,
    'worker->worker',
    'the leader turns a member away, saying why (a differing job, an address taken)',
    {
      reason: field(string),
    },
  ),
  MeshLinkHello: message(
    213,
    'worker->worker',
    "the first frame of a mesh link: the dialling member (a higher one dials a lower one's exchange port)",
    {
      member: field(u32, 'its position in the sorted member set'),
      fingerprint: field(string, "the run's topology fingerprint: a link from another run is refused"),
    },
  ),
  LinkFrame: message(
    214,
    'worker->worker',
    "one channel's data-plane frame on a link (a mesh link, or a cluster's data link: every channel between two processes shares it)",
    {
      channel: field(u32, 'the channel, numbered by the side that opened it'),
      fromOpener: field(
        bool,
        "true from the channel's sending end (DataHello, records, end), false from its receiving end (DataCredit, DataRefused)",
      ),
      frame: field(bytes, 'the data-plane message, encoded without its length prefix'),
    },
  ),
  MeshReady: message(
    215,
    'worker->worker',
    'a member to the leader: its slice is deployed and its inputs take channels',
    {},
  ),
  MeshStart: message(216, 'worker->worker', 'the leader to every member once all are ready: run', {}),
  MeshHeartbeat: message(
    218,
    'worker->worker',
    'the leader and each member to each other every second on the control connection: silence past --mesh-heartbeat-timeout-ms is a lost member',
    {},
  ),
  MeshStop: message(
    217,
    'worker->worker',
    'the run ends: from the leader to every member (done, or failed with the cause), or from a member that failed',
    {
      ok: field(bool, 'the run finished; false: it failed'),
      reason: field(string, 'why it failed (empty when ok)'),
    },
  ),

  // worker -> worker: the data plane. One connection per (edge, upstream subtask, downstream subtask).
  DataHello: message(
    200,
    'worker->worker',
    'the first frame of a data connection: which channel of which subtask it feeds',
    {
      jobId: field(string),
      attempt: field(u32, 'the deploy attempt; a connection from another attempt is refused'),
      edgeIndex: field(u32, 'the edge, by its index in the JobGraphSpec'),
      upstreamSubtask: field(u32),
      downstreamTaskId: field(string),
      downstreamSubtask: field(u32),
      upstreamTaskId: tail(string, '', 'the sending task, for metrics labels'),
      mac: tail(
        string,
        '',
        "HMAC-SHA256 (hex) of the fields above under the attempt's data secret (Deploy.dataSecret)",
      ),
    },
  ),
  DataBatch: message(201, 'worker->worker', 'records, as a record batch (see Data-plane record batches)', {
    batch: field(bytes),
  }),
  DataWatermark: message(202, 'worker->worker', "the channel's watermark advanced", {
    timestamp: field(f64),
  }),
  DataStatus: message(203, 'worker->worker', 'the channel went idle, or active again', {
    idle: field(bool),
  }),
  DataEnd: message(204, 'worker->worker', 'the channel has no more records', {}),
  DataBarrier: message(206, 'worker->worker', 'a checkpoint barrier, in band after the records it follows', {
    checkpointId: field(u64),
    unaligned: tail(
      bool,
      false,
      "an unaligned checkpoint's: sent ahead of the elements waiting for credit, and taken by the receiver ahead of what it has queued",
    ),
    overtaken: tail(
      u32,
      0,
      'elements of the channel sent before the barrier that it overtook: the receiver writes them with the checkpoint as in flight',
    ),
  }),
  DataRefused: message(
    207,
    'worker->worker',
    'on a link: receiver to sender, this channel is refused (no such subtask, a bad proof) and why; sender to receiver, the sender stopped early (its job cancelled or failed)',
    {
      reason: field(string),
    },
  ),
  DataCredit: message(
    205,
    'worker->worker',
    'receiver to sender: room for this many more record batches (credit-based flow control)',
    {
      credits: field(u32),
      columns: tail(
        bool,
        false,
        'the receiver reads columnar record batches (batch flags bit 1); a sender writes them only then',
      ),
      constants: tail(
        bool,
        false,
        'the receiver reads one timestamp for a whole batch (batch flags bit 2) and constant columns (column type 6); a sender writes them only then',
      ),
      tuples: tail(
        bool,
        false,
        'the receiver reads columnar batches of arrays (batch flags bit 3: one column per position, no field names); a sender writes them only then',
      ),
      batchLimit: tail(
        u32,
        0,
        'the most records a batch sent from now on should hold, so what waits at the receiver is a bounded time of its work (buffer debloating); 0: no limit',
      ),
    },
  ),
} as const;

for (const [name, def] of Object.entries(MESSAGES)) checkFieldOrder(name, def.fields);

export type MessageName = keyof typeof MESSAGES;
export type MessageBody<N extends MessageName> = ValuesOf<(typeof MESSAGES)[N]['fields']>;
/** A decoded message: `{ type: 'Heartbeat', seq: 1, ... }`. */
export type Message = { [N in MessageName]: { type: N } & MessageBody<N> }[MessageName];
export type MessageOf<N extends MessageName> = Extract<Message, { type: N }>;
/** One running subtask's counts as a heartbeat carries them. */
export type SubtaskProgressReport = MessageOf<'Heartbeat'>['subtasks'][number];

/** The kind byte of each message. */
export const MessageKind = Object.fromEntries(Object.entries(MESSAGES).map(([n, d]) => [n, d.kind])) as {
  [N in MessageName]: (typeof MESSAGES)[N]['kind'];
};

export const MESSAGE_BY_KIND: ReadonlyMap<number, MessageName> = new Map(
  Object.entries(MESSAGES).map(([n, d]) => [d.kind, n as MessageName]),
);

/** Requests a client may send after HelloClient. */
export const CLIENT_REQUEST_KINDS: readonly number[] = Object.values(MESSAGES)
  .filter((d) => d.direction === 'client->coordinator' || d.direction === 'both')
  .map((d) => d.kind);
