/**
 * The flags of `clink run`, `submit`, `sql` and `node`, declared once: each command adds the groups it
 * takes, and `clink lint` takes them all, so a command line pasted into lint is parsed by the same
 * code as the command it previews (and a clean lint means the same settings).
 */
import { type Command, Option } from 'commander';
import type { CheckpointSettings } from '../client/index.js';
import { DEFAULT_CONTROL_PORT, DEFAULT_HANDSHAKE_TIMEOUT_MS, DEFAULT_HOST, HA_DEFAULTS } from '../config/index.js';
import { parseCoordinators, type CoordinatorTarget, type Endpoint } from './endpoint.js';
import {
  collectParam,
  flagValue,
  intArg,
  nonNegativeInt,
  positiveInt,
  renamed,
  renamedFlag,
  slotSharingOption,
} from './flags.js';
import type { TlsFlags } from './tls-flags.js';
import { bounds } from '../util/index.js';
import { InvalidArgumentError } from '../errors.js';
import { ALIGNMENT_MODES, STATE_BACKEND_TYPES, type AlignmentMode, type StateBackendType } from '../protocol/index.js';

/** Where `--coordinator` points when not given (and CLINK_COORDINATOR is unset): a local coordinator's default port. */
export const DEFAULT_COORDINATOR = `${DEFAULT_HOST}:${DEFAULT_CONTROL_PORT}`;

/** Add `options` to `cmd`, leaving out any whose long flag it already has (the first declaration wins). */
export function addOptions(cmd: Command, options: readonly Option[]): Command {
  for (const o of options) if (!cmd.options.some((have) => have.long === o.long)) cmd.addOption(o);
  return cmd;
}

export type JobFlags = { parallelism?: number; param: Record<string, string> };

export const jobOptions = (): Option[] => [
  new Option('-p, --parallelism <n>', 'default parallelism of operators').argParser(positiveInt),
  new Option('--param <key=value>', 'a job parameter, read as env.params.key (repeatable)')
    .argParser(collectParam)
    .default({}),
];

export const typecheckOptions = (): Option[] => [
  new Option('--no-typecheck', 'run without type-checking the job first (it is checked when TypeScript is installed)'),
];

export const outputOptions = (): Option[] => [
  new Option('--output <format>', 'how to print collected results').choices(['table', 'json']).default('table'),
  new Option('--max-rows <n>', 'rows of each collected result to print (0: all)').argParser(nonNegativeInt).default(20),
];

export type CheckpointFlags = {
  checkpointDir?: string;
  checkpointIntervalMs: number;
  checkpointsRetained: number;
  stateBackend?: string;
  stateBackendType?: StateBackendType;
  alignment: AlignmentMode;
  alignedCheckpointTimeoutMs: number;
  checkpointTimeoutMs: number;
  checkpointMinPauseMs: number;
  tolerableFailedCheckpoints: number;
  maxRestartsFromCheckpoint: number;
  maxRestartsOnWorkerLoss?: number;
  maxRegionRetries: number;
  maxRestarts?: number;
  restoreFromDir?: string;
  restoreFromCheckpointId: number;
  allowNonRestoredState: boolean;
  allowDuplicatesOnFallback: boolean;
  guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
};

/** `min..max`, both whole numbers >= 1, min <= max. */

export const checkpointOptions = (): Option[] => [
  new Option('--checkpoint-dir <dir>', 'take checkpoints into this directory (none without it)'),
  new Option('--checkpoint-interval-ms <ms>', 'how often to checkpoint (0: never on a timer)')
    .argParser(nonNegativeInt)
    .default(0),
  new Option('--checkpoints-retained <n>', 'completed checkpoints to keep (older ones are deleted)')
    .argParser(positiveInt)
    .default(1),
  new Option(
    '--state-backend <uri>',
    'where checkpoint state goes: a directory or file:// URI [default: the checkpoint dir]',
  ),
  new Option(
    '--state-backend-type <type>',
    "where keyed state lives: heap (the job thread's memory) or disk (LMDB on the worker's --local-state-dir, with a cache of hot keys; state beyond memory) (Flink's state.backend.type) [default: the cluster's, clink node --default-state-backend-type]",
  ).choices(STATE_BACKEND_TYPES),
  new Option(
    '--alignment <mode>',
    'barrier alignment: aligned; unaligned (periodic checkpoints: barriers overtake the records queued ahead of them, which are written with the checkpoint; savepoints stay aligned); or adaptive (aligned, converted to unaligned past --aligned-checkpoint-timeout-ms)',
  )
    .choices(ALIGNMENT_MODES)
    .default('aligned'),
  new Option(
    '--aligned-checkpoint-timeout-ms <ms>',
    "with --alignment adaptive: a periodic checkpoint not complete within this becomes unaligned, its barriers overtaking from there (Flink's execution.checkpointing.aligned-checkpoint-timeout) (0: unaligned from the start)",
  )
    .argParser(nonNegativeInt)
    .default(0),
  new Option(
    '--checkpoint-timeout-ms <ms>',
    "abort a checkpoint not complete within this (Flink's execution.checkpointing.timeout) (0: max(10 s, 10 intervals))",
  )
    .argParser(nonNegativeInt)
    .default(0),
  new Option(
    '--checkpoint-min-pause-ms <ms>',
    "the least time from the end of a checkpoint to the start of the next (Flink's execution.checkpointing.min-pause)",
  )
    .argParser(nonNegativeInt)
    .default(0),
  new Option(
    '--tolerable-failed-checkpoints <n>',
    "consecutive failed checkpoints tolerated before the job restarts from its last (Flink's execution.checkpointing.tolerable-failed-checkpoints) (-1: any number)",
  )
    .argParser(intArg(-1))
    .default(-1),
  new Option(
    '--max-restarts-from-checkpoint <n>',
    'with checkpoints: how often the whole job restarts from its last checkpoint after a worker is lost or a subtask fails (-1: automatic, 10)',
  )
    .argParser(intArg(-1))
    .default(-1),
  renamedFlag('--max-restarts-on-worker-loss <n>', 'maxRestartsFromCheckpoint', intArg(-1)),
  new Option(
    '--max-region-retries <n>',
    "without checkpoints: how often each failed subtask is retried, re-running its failover region from the beginning (at-least-once) (-1: the coordinator's default, 0 unless set)",
  )
    .argParser(intArg(-1))
    .default(-1),
  renamedFlag('--max-restarts <n>', 'maxRegionRetries', intArg(-1)),
  new Option(
    '--restore-from-dir <dir>',
    "restore from a checkpoint: a job's marker directory, or a checkpoint directory holding one job",
  ),
  new Option('--restore-from-checkpoint-id <id>', 'the checkpoint to restore (default: the newest completed)')
    .argParser(nonNegativeInt)
    .default(0),
  new Option(
    '--allow-non-restored-state',
    'restore even though the checkpoint holds state for operators the job no longer has (that state is dropped)',
  ).default(false),
  new Option(
    '--allow-duplicates-on-fallback',
    'when the newest checkpoint is damaged, restore from an older one even though transactional sinks may have made visible what came after it (it is written again): the job is at-least-once',
  ).default(false),
  new Option(
    '--guarantee <level>',
    "the delivery guarantee the job needs end to end; a submit that cannot give it is refused, naming what limits it [default: defineJob's guarantee, or none]",
  ).choices(['at-most-once', 'at-least-once', 'exactly-once']),
];

/** Submit's and lint's: bounds for an autoscaler. */
export const autoscaleOptions = (): Option[] => [
  new Option(
    '--autoscale <min..max>',
    'let the autoscaler rescale the job within these bounds: out on sustained backpressure, in on sustained idleness (needs --checkpoint-dir)',
  ).argParser(flagValue(bounds)),
];

export function checkpointSettings(o: CheckpointFlags): CheckpointSettings {
  return {
    checkpointDir: o.checkpointDir ?? '',
    intervalMs: o.checkpointIntervalMs,
    checkpointsRetained: o.checkpointsRetained,
    stateBackendUri: o.stateBackend ?? '',
    stateBackendType: o.stateBackendType ?? 'default',
    alignment: o.alignment,
    timeoutMs: o.checkpointTimeoutMs,
    minPauseMs: o.checkpointMinPauseMs,
    alignedTimeoutMs: o.alignedCheckpointTimeoutMs,
    tolerableFailures: o.tolerableFailedCheckpoints,
    maxRestartsOnWorkerLoss: renamed(o, 'maxRestartsFromCheckpoint', 'maxRestartsOnWorkerLoss'),
    maxRestarts: renamed(o, 'maxRegionRetries', 'maxRestarts'),
    restoreFromDir: o.restoreFromDir ?? '',
    restoreFromCheckpointId: o.restoreFromCheckpointId,
    allowNonRestoredState: o.allowNonRestoredState,
    allowDuplicatesOnFallback: o.allowDuplicatesOnFallback,
  };
}

export type TargetFlags = TlsFlags & {
  coordinator: Endpoint[];
  haDir?: string;
  etcdEndpoints?: string[];
  etcdCluster: string;
  handshakeTimeoutMs: number;
};

/** `local`: without --coordinator the command works on this machine (clink sql), so there is no default. */
export const coordinatorTargetOptions = (local = false): Option[] => [
  local
    ? new Option(
        '--coordinator <host:port,...>',
        'submit to the cluster at this control port (clink node --port) [default: run on this machine]',
      )
        .env('CLINK_COORDINATOR')
        .argParser(parseCoordinators)
    : new Option(
        '--coordinator <host:port,...>',
        "the coordinator's control port (clink node --port); several: the HA coordinators, the first that answers leads",
      )
        .env('CLINK_COORDINATOR')
        .argParser(parseCoordinators)
        .default(parseCoordinators(DEFAULT_COORDINATOR), DEFAULT_COORDINATOR),
  new Option('--ha-dir <dir>', 'find the leading coordinator in this HA directory (instead of --coordinator)'),
  new Option(
    '--etcd-endpoints <urls>',
    'find the leading coordinator in etcd (comma-separated; instead of --coordinator)',
  ).argParser((v: string) => v.split(',').filter(Boolean)),
  new Option('--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys').default(
    HA_DEFAULTS.etcdCluster,
  ),
  new Option('--tls-ca <file>', "connect over TLS, verifying the coordinator's certificate against this CA (PEM)"),
  new Option('--tls-client-cert <file>', "under mTLS: this client's certificate (PEM)"),
  new Option('--tls-client-key <file>', 'under mTLS: its private key (PEM)'),
  new Option(
    '--tls-no-verify-hostname',
    "check the coordinator's certificate chain but not that it names the host (needs --tls-ca)",
  ),
  new Option('--handshake-timeout-ms <ms>', 'TCP connect and TLS handshake must finish within this')
    .argParser(positiveInt)
    .default(DEFAULT_HANDSHAKE_TIMEOUT_MS),
];

/** Where a client command finds its coordinator, and how it connects. */
export function target(o: TargetFlags): CoordinatorTarget {
  const tls: TlsFlags = {
    ...(o.tlsCa ? { tlsCa: o.tlsCa } : {}),
    ...(o.tlsClientCert ? { tlsClientCert: o.tlsClientCert } : {}),
    ...(o.tlsClientKey ? { tlsClientKey: o.tlsClientKey } : {}),
    ...(o.tlsNoVerifyHostname ? { tlsNoVerifyHostname: true } : {}),
  };
  return {
    endpoints: o.coordinator,
    ...(o.haDir ? { haDir: o.haDir } : {}),
    ...(o.etcdEndpoints ? { etcdEndpoints: o.etcdEndpoints, etcdCluster: o.etcdCluster } : {}),
    ...(o.tlsCa ? { tls } : {}),
    handshakeTimeoutMs: o.handshakeTimeoutMs,
  };
}

/** `clink run`'s own: how the local cluster runs. */
export const localRunOptions = (): Option[] => [
  new Option('--no-progress', 'do not show progress on standard error'),
  new Option(
    '--workers <n>',
    'local worker processes (0 runs everything in this process) [default: one per core]',
  ).argParser(nonNegativeInt),
  new Option('--batch-size <n>', 'records per batch between tasks').argParser(positiveInt).default(1_000),
  new Option('--batch-linger-ms <ms>', 'how long a partly filled batch may wait to fill')
    .argParser(nonNegativeInt)
    .default(0),
  new Option(
    '--debloat-target-ms <ms>',
    'buffer debloating: size batches so a task has about this much work queued (0: off)',
  )
    .argParser(nonNegativeInt)
    .default(0),
  slotSharingOption(),
];

/** A mesh run's (design record 017): `--lead` or `--join`, each with `--exchange`. */
export const meshOptions = (): Option[] => [
  new Option(
    '--lead <members>',
    'lead a mesh run of this many members (itself included), with no coordinator; needs --control and --exchange',
  )
    .argParser(positiveInt)
    .conflicts(['join', 'workers']),
  new Option('--control <host:port>', "with --lead: where the members register (the leader's control port)"),
  new Option('--join <host:port>', 'join the mesh run led at this control address; needs --exchange').conflicts([
    'workers',
  ]),
  new Option(
    '--exchange <host:port>',
    "this member's address on the mesh: its peers dial it there (each member its own)",
  ),
  new Option(
    '--restart',
    'in a mesh run: after a member is lost, rendezvous again and resume from the last completed checkpoint',
  ),
  new Option('--mesh-timeout-ms <ms>', 'in a mesh run: how long the members may take to come together and link up')
    .argParser(positiveInt)
    .default(60_000),
  new Option('--mesh-heartbeat-timeout-ms <ms>', 'in a mesh run: a member (or the leader) silent this long is lost')
    .argParser(positiveInt)
    .default(10_000),
];

export interface MeshFlags {
  lead?: number;
  control?: string;
  join?: string;
  exchange?: string;
  restart?: boolean;
  meshTimeoutMs: number;
  meshHeartbeatTimeoutMs: number;
}

/** The mesh role the flags ask for (undefined: a local run), or InvalidArgumentError naming the flag missing. */
export function meshFlags(o: MeshFlags): MeshRunFlags | undefined {
  const need = (flag: string, by: string): never => {
    throw new InvalidArgumentError(`${by} needs ${flag}`);
  };
  if (o.lead !== undefined) {
    if (!o.control) need('--control <host:port> (where the members register)', '--lead');
    if (!o.exchange) need("--exchange <host:port> (this member's address on the mesh)", '--lead');
    return {
      role: { lead: o.lead, control: o.control! },
      exchange: o.exchange!,
      restart: o.restart === true,
      timeoutMs: o.meshTimeoutMs,
      heartbeatTimeoutMs: o.meshHeartbeatTimeoutMs,
    };
  }
  if (o.join !== undefined) {
    if (!o.exchange) need("--exchange <host:port> (this member's address on the mesh)", '--join');
    return {
      role: { join: o.join },
      exchange: o.exchange!,
      restart: o.restart === true,
      timeoutMs: o.meshTimeoutMs,
      heartbeatTimeoutMs: o.meshHeartbeatTimeoutMs,
    };
  }
  for (const [flag, set] of [
    ['--control', o.control],
    ['--exchange', o.exchange],
    ['--restart', o.restart],
  ] as const) {
    if (set !== undefined)
      throw new InvalidArgumentError(`${flag} is for a mesh run: add --lead <members> or --join <leader host:port>`);
  }
  return undefined;
}

export interface MeshRunFlags {
  role: { lead: number; control: string } | { join: string };
  exchange: string;
  restart: boolean;
  timeoutMs: number;
  heartbeatTimeoutMs: number;
}

/** `clink submit`'s own. */
export const submitOptions = (): Option[] => [
  new Option('--name <name>', "the job's name [default: its defineJob name]"),
  new Option('--wait', 'wait for the job to end; exit non-zero with its error if it fails'),
  new Option('--no-progress', 'with --wait, do not show progress on standard error'),
];
