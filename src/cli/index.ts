/**
 * The `clink` command line. Commands are thin: they parse flags and call the library.
 *
 * @example
 * process.exitCode = await main(process.argv);
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ClinkError, UserCodeError } from '../errors.js';
import { parseCoordinators, type CoordinatorTarget, type Endpoint } from './endpoint.js';
import { tlsFlagProblems, type TlsFlags, type TlsRole } from './tls-flags.js';
import { exposureVerdict } from './exposure.js';
import { authTokenFromEnv } from '../util/index.js';
import { installInterrupts } from './interrupt.js';
import type { CheckpointSettings } from '../client/index.js';
import { keyValue, wholeNumber, type ValueParser } from '../util/index.js';

// Each command imports what it needs when it runs, so `clink submit` does not load the coordinator,
// the HTTP server or the log prettifier: CLI start-up is part of every command's latency.

/**
 * Exit codes: 0 success, 1 the job failed, could not be loaded, or the machine refused what was asked
 * (a port in use), 2 bad usage, 70 an engine bug, 75 try again (the coordinator is busy), 130
 * interrupted (Ctrl-C or SIGTERM).
 */
export const EXIT_OK = 0;
export const EXIT_JOB_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERNAL = 70;
export const EXIT_TEMPFAIL = 75;
export const EXIT_INTERRUPTED = 130;

/** Where `--coordinator` points when not given (and CLINK_COORDINATOR is unset): a local coordinator's default port. */
export const DEFAULT_COORDINATOR = '127.0.0.1:6123';

/** A flag's value through the parser the HTTP submit's query uses too (client/submit-settings.ts), refused as commander refuses. */
function flagValue<T>(parse: ValueParser<T>): (v: string) => T {
  return (v) => {
    try {
      return parse(v);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}
const intArg = (min: number): ((v: string) => number) => flagValue(wholeNumber(min));
const positiveInt = intArg(1);
const nonNegativeInt = intArg(0);

function collectParam(v: string, acc: Record<string, string>): Record<string, string> {
  const [key, value] = flagValue(keyValue)(v);
  return { ...acc, [key]: value };
}

/** A Node system error (EACCES, ENOSPC, ECONNREFUSED, ...): the machine said no, not a bug in clink. */
function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

function describeError(err: unknown): string {
  if (err instanceof UserCodeError) {
    const cause = err.cause instanceof Error ? (err.cause.stack ?? String(err.cause)) : String(err.cause);
    return `error: job failed: ${err.message}\n\ncaused by: ${cause}`;
  }
  if (err instanceof ClinkError) return err.code === 'CLINK_ERR_INTERRUPTED' ? err.message : `error: ${err.message}`;
  if (isSystemError(err)) return `error: ${err.message}`;
  return `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof ClinkError) return err.code === 'CLINK_ERR_BUSY' ? EXIT_TEMPFAIL : err.code === 'CLINK_ERR_INTERRUPTED' ? EXIT_INTERRUPTED : EXIT_JOB_FAILED;
  return isSystemError(err) ? EXIT_JOB_FAILED : EXIT_INTERNAL;
}

const slotSharingOption = (prefix = ''): Option =>
  new Option(
    '--slot-sharing <mode>',
    `${prefix}on: a slot holds one subtask of each task of a slot sharing group (parallelism p needs p slots a group, as in Flink); off: one slot per subtask`,
  )
    .choices(['on', 'off'])
    .default('on');

function clinkVersion(): string {
  const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };
  return pkg.version;
}

type JobFlags = { parallelism?: number; param: Record<string, string> };
type CheckpointFlags = {
  checkpointDir?: string;
  checkpointIntervalMs: number;
  checkpointsRetained: number;
  stateBackend?: string;
  alignment: 'aligned' | 'unaligned';
  maxRestartsFromCheckpoint: number;
  maxRestartsOnWorkerLoss?: number;
  maxRegionRetries: number;
  maxRestarts?: number;
  restoreFromDir?: string;
  restoreFromCheckpointId: number;
  allowNonRestoredState: boolean;
  guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
};

/**
 * An old spelling of a renamed flag: accepted, hidden from help, and refused beside the new one.
 * `renamed` reads whichever was given.
 */
function renamedFlag(flags: string, newAttribute: string, parse: (v: string) => number): Option {
  return new Option(flags).hideHelp().argParser(parse).conflicts(newAttribute);
}

function renamed<T extends object>(o: T, newAttribute: keyof T & string, oldAttribute: keyof T & string): number {
  return (o[oldAttribute] ?? o[newAttribute]) as number;
}

type TargetFlags = TlsFlags & { coordinator: Endpoint[]; haDir?: string; etcdEndpoints?: string[]; etcdCluster: string; handshakeTimeoutMs: number };

/** Where a client command finds its coordinator, and how it connects. */
function target(o: TargetFlags): CoordinatorTarget {
  const tls: TlsFlags = { ...(o.tlsCa ? { tlsCa: o.tlsCa } : {}), ...(o.tlsClientCert ? { tlsClientCert: o.tlsClientCert } : {}), ...(o.tlsClientKey ? { tlsClientKey: o.tlsClientKey } : {}), ...(o.tlsNoVerifyHostname ? { tlsNoVerifyHostname: true } : {}) };
  return {
    endpoints: o.coordinator,
    ...(o.haDir ? { haDir: o.haDir } : {}),
    ...(o.etcdEndpoints ? { etcdEndpoints: o.etcdEndpoints, etcdCluster: o.etcdCluster } : {}),
    ...(o.tlsCa ? { tls } : {}),
    handshakeTimeoutMs: o.handshakeTimeoutMs,
  };
}

/** Refuse an incoherent set of TLS flags: one line each, exit 2. */
function checkTlsFlags(cmd: Command, o: TlsFlags, role: TlsRole): void {
  const problems = tlsFlagProblems(o, role);
  if (problems.length > 0) cmd.error(problems.map((p) => `error: ${p}`).join('\n'));
}

function checkpointSettings(o: CheckpointFlags): CheckpointSettings {
  return {
    checkpointDir: o.checkpointDir ?? '',
    intervalMs: o.checkpointIntervalMs,
    checkpointsRetained: o.checkpointsRetained,
    stateBackendUri: o.stateBackend ?? '',
    alignment: o.alignment,
    maxRestartsOnWorkerLoss: renamed(o, 'maxRestartsFromCheckpoint', 'maxRestartsOnWorkerLoss'),
    maxRestarts: renamed(o, 'maxRegionRetries', 'maxRestarts'),
    restoreFromDir: o.restoreFromDir ?? '',
    restoreFromCheckpointId: o.restoreFromCheckpointId,
    allowNonRestoredState: o.allowNonRestoredState,
  };
}

export async function main(argv: string[]): Promise<number> {
  process.setSourceMapsEnabled(true);
  const program = new Command()
    .name('clink')
    .description('A distributed, stateful, exactly-once stream-processing engine for Node.js')
    .version(clinkVersion(), '-V, --version', 'print the version of clink')
    .exitOverride()
    // --log-format and --log-level are the program's, but every command takes them: its help says so.
    .configureHelp({ showGlobalOptions: true })
    // One line saying what is wrong, then where the rest is: never the whole help after a typo.
    .showHelpAfterError('(add --help for usage)')
    .addOption(new Option('--log-format <format>', 'log lines as pretty text or JSON [default: pretty on a terminal, json otherwise]').choices(['pretty', 'json']).env('CLINK_LOG_FORMAT'))
    .addOption(new Option('--log-level <level>', "least severe log lines shown [default: info; 'error' for clink run]").choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).env('CLINK_LOG_LEVEL'))
    .hook('preAction', (cmd, action) => {
      if (['submit', 'jobs', 'cancel', 'savepoint'].includes(action.name())) checkTlsFlags(action, action.opts<TlsFlags>(), 'client');
      if (action.name() !== 'node') uninstallInterrupts = installInterrupts();
      // Through the environment, so local worker processes and job threads log the same way.
      const o = cmd.opts<{ logFormat?: string; logLevel?: string }>();
      if (o.logFormat) process.env.CLINK_LOG_FORMAT = o.logFormat;
      if (o.logLevel) process.env.CLINK_LOG_LEVEL = o.logLevel;
    });
  let exitCode = EXIT_OK;
  let uninstallInterrupts: (() => void) | undefined;

  const jobOptions = (cmd: Command): Command =>
    cmd
      .addOption(new Option('-p, --parallelism <n>', 'default parallelism of operators').argParser(positiveInt))
      .option('--param <key=value>', 'a job parameter, read as env.params.key (repeatable)', collectParam, {});
  const typecheckOption = (cmd: Command): Command => cmd.option('--no-typecheck', 'run without type-checking the job first (it is checked when TypeScript is installed)');
  const outputOptions = (cmd: Command): Command =>
    cmd
      .addOption(new Option('--output <format>', 'how to print collected results').choices(['table', 'json']).default('table'))
      .option('--max-rows <n>', 'rows of each collected result to print (0: all)', nonNegativeInt, 20);
  const checkpointOptions = (cmd: Command): Command =>
    cmd
      .option('--checkpoint-dir <dir>', 'take checkpoints into this directory (none without it)')
      .option('--checkpoint-interval-ms <ms>', 'how often to checkpoint (0: never on a timer)', nonNegativeInt, 0)
      .option('--checkpoints-retained <n>', 'completed checkpoints to keep (older ones are deleted)', positiveInt, 1)
      .option('--state-backend <uri>', 'where checkpoint state goes: a directory or file:// URI [default: the checkpoint dir]')
      .addOption(new Option('--alignment <mode>', 'barrier alignment (unaligned is not supported yet)').choices(['aligned', 'unaligned']).default('aligned'))
      .option(
        '--max-restarts-from-checkpoint <n>',
        'with checkpoints: how often the whole job restarts from its last checkpoint after a worker is lost or a subtask fails (-1: automatic, 10)',
        intArg(-1),
        -1,
      )
      .addOption(renamedFlag('--max-restarts-on-worker-loss <n>', 'maxRestartsFromCheckpoint', intArg(-1)))
      .option(
        '--max-region-retries <n>',
        "without checkpoints: how often each failed subtask is retried, re-running its failover region from the beginning (at-least-once) (-1: the coordinator's default, 0 unless set)",
        intArg(-1),
        -1,
      )
      .addOption(renamedFlag('--max-restarts <n>', 'maxRegionRetries', intArg(-1)))
      .option('--restore-from-dir <dir>', "restore from a checkpoint: a job's marker directory, or a checkpoint directory holding one job")
      .option('--restore-from-checkpoint-id <id>', 'the checkpoint to restore (default: the newest completed)', nonNegativeInt, 0)
      .option('--allow-non-restored-state', 'restore even though the checkpoint holds state for operators the job no longer has (that state is dropped)', false)
      .addOption(new Option('--guarantee <level>', "the delivery guarantee the job needs end to end; a submit that cannot give it is refused, naming what limits it [default: defineJob's guarantee, or none]").choices(['at-most-once', 'at-least-once', 'exactly-once']));
  const coordinatorOption = (cmd: Command): Command =>
    cmd
      .addOption(
        new Option('--coordinator <host:port,...>', "the coordinator's control port (clink node --port); several: the HA coordinators, the first that answers leads")
          .env('CLINK_COORDINATOR')
          .argParser(parseCoordinators)
          .default(parseCoordinators(DEFAULT_COORDINATOR), DEFAULT_COORDINATOR),
      )
      .option('--ha-dir <dir>', 'find the leading coordinator in this HA directory (instead of --coordinator)')
      .option('--etcd-endpoints <urls>', 'find the leading coordinator in etcd (comma-separated; instead of --coordinator)', (v: string) => v.split(',').filter(Boolean))
      .option('--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys', 'default')
      .option('--tls-ca <file>', "connect over TLS, verifying the coordinator's certificate against this CA (PEM)")
      .option('--tls-client-cert <file>', 'under mTLS: this client\'s certificate (PEM)')
      .option('--tls-client-key <file>', 'under mTLS: its private key (PEM)')
      .option('--tls-no-verify-hostname', "check the coordinator's certificate chain but not that it names the host (needs --tls-ca)")
      .option('--handshake-timeout-ms <ms>', 'TCP connect and TLS handshake must finish within this', positiveInt, 5_000);

  typecheckOption(checkpointOptions(outputOptions(jobOptions(program.command('run').description('compile a job module and run it on this machine').argument('<job>', 'job file (.ts or .js)')))))
    .option('--no-progress', 'do not show progress on standard error')
    .option('--workers <n>', 'local worker processes (0 runs everything in this process) [default: one per core]', nonNegativeInt)
    .option('--batch-size <n>', 'records per batch between tasks', positiveInt, 1_000)
    .option('--batch-linger-ms <ms>', 'how long a partly filled batch may wait to fill', nonNegativeInt, 0)
    .addOption(slotSharingOption())
    .action(async (job: string, o: JobFlags & CheckpointFlags & { progress: boolean; output: 'table' | 'json'; maxRows: number; workers?: number; batchSize: number; batchLingerMs: number; slotSharing: 'on' | 'off'; typecheck: boolean }) => {
      const { runCommand } = await import('./run.js');
      await runCommand(job, {
        checkpoint: checkpointSettings(o),
        ...(o.guarantee ? { guarantee: o.guarantee } : {}),
        ...(o.parallelism ? { parallelism: o.parallelism } : {}),
        params: o.param,
        progress: o.progress,
        output: o.output,
        maxRows: o.maxRows,
        ...(o.workers !== undefined ? { workers: o.workers } : {}),
        batchSize: o.batchSize,
        batchLingerMs: o.batchLingerMs,
        slotSharing: o.slotSharing === 'on',
        typecheck: o.typecheck,
      });
    });

  program
    .command('init')
    .description('create a job project: package.json depending on this clink, tsconfig, an example job and its test')
    .argument('<dir>', 'a new or empty directory')
    .option('--name <name>', "the project's package name [default: the directory's name]")
    .option('--clink <spec>', 'how package.json depends on clink [default: this checkout by path, or its version when installed]')
    .option('--no-install', 'do not run npm install in it')
    .action(async (dir: string, o: { name?: string; clink?: string; install: boolean }) =>
      (await import('./init.js')).initCommand(dir, { ...(o.name ? { name: o.name } : {}), ...(o.clink ? { clink: o.clink } : {}), install: o.install }),
    );

  jobOptions(program.command('plan').description("print a job's plan: operators, edges and chained tasks").argument('<job>', 'job file'))
    .option('--json', 'print the JobGraphSpec as JSON')
    .action(async (job: string, o: JobFlags & { json?: boolean }) => {
      const { planCommand } = await import('./plan.js');
      await planCommand(job, { ...(o.parallelism ? { parallelism: o.parallelism } : {}), params: o.param, json: o.json === true });
    });

  typecheckOption(checkpointOptions(outputOptions(coordinatorOption(jobOptions(program.command('submit').description('submit a job to a coordinator and print its id').argument('<job>', 'job file'))))))
    .option('--name <name>', "the job's name [default: its defineJob name]")
    .option('--wait', 'wait for the job to end; exit non-zero with its error if it fails')
    .action(async (job: string, o: JobFlags & CheckpointFlags & TargetFlags & { name?: string; wait?: boolean; output: 'table' | 'json'; maxRows: number; typecheck: boolean }) => {
      const { submitCommand } = await import('./client.js');
      await submitCommand(job, {
        checkpoint: checkpointSettings(o),
        ...(o.guarantee ? { guarantee: o.guarantee } : {}),
        coordinator: target(o),
        ...(o.parallelism ? { parallelism: o.parallelism } : {}),
        params: o.param,
        ...(o.name ? { name: o.name } : {}),
        wait: o.wait === true,
        output: o.output,
        maxRows: o.maxRows,
        typecheck: o.typecheck,
      });
    });

  coordinatorOption(program.command('jobs').description('list running and recent jobs'))
    .option('--json', 'print JSON')
    .action(async (o: TargetFlags & { json?: boolean }) => (await import('./client.js')).jobsCommand({ coordinator: target(o), json: o.json === true }));

  coordinatorOption(program.command('savepoint').description('take a savepoint of a running job into a directory and print its path').argument('<jobId>', 'the job id'))
    .requiredOption('--dir <dir>', 'where the savepoint goes')
    .option('--cancel', 'end the job once the savepoint is durable')
    .action(async (jobId: string, o: TargetFlags & { dir: string; cancel?: boolean }) =>
      (await import('./client.js')).savepointCommand(jobId, { coordinator: target(o), dir: o.dir, cancel: o.cancel === true }),
    );

  coordinatorOption(program.command('cancel').description('cancel a running job').argument('<jobId>', 'the job id'))
    .action(async (jobId: string, o: TargetFlags) => (await import('./client.js')).cancelCommand(jobId, { coordinator: target(o) }));

  program
    .command('connectors')
    .description('list the connectors this build has, with what each can promise')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => (await import('./connectors.js')).connectorsCommand(o.json === true));

  program
    .command('node')
    .description('run a cluster node: a coordinator or a worker')
    .addOption(new Option('--role <role>', 'what this node is').choices(['coordinator', 'worker']).makeOptionMandatory())
    .option('--ready-file <path>', 'when listening, write {"controlPort":N,"httpPort":M} here')
    .option('--http-port <n>', 'serve the HTTP API on this port (0 picks one)', nonNegativeInt)
    .option('--http-static-dir <dir>', 'a coordinator: serve this built console at / instead of the one clink ships')
    .option('--otlp-endpoint <host[:port]>', "export metrics and spans over OTLP/HTTP to this collector (port 4318 when absent; off without it)")
    .option('--otlp-interval-ms <ms>', 'how often metrics are exported over OTLP', positiveInt, 10_000)
    // coordinator
    .option('--port <n>', 'coordinator: control port (0 picks one)', nonNegativeInt, 6123)
    .option('--bind-host <host>', 'coordinator: address to listen on', '127.0.0.1')
    .option('--advertise-host <host>', 'coordinator: the host it publishes [default: bind host]')
    .option('--ha-dir <dir>', 'high availability: a coordinator stands for leadership by a lock in this directory and persists its jobs there; a worker finds the leader there')
    .option('--ha-allow-unsafe-locks', 'coordinator: stand for leadership even where the lock probe finds the directory grants one lock to two processes (warns)', false)
    .option('--etcd-endpoints <urls>', 'high availability through etcd: leader election (coordinator) or leader discovery (worker), comma-separated', (v: string) => v.split(',').filter(Boolean))
    .option('--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys', 'default')
    .option('--etcd-lease-ttl-s <s>', 'coordinator: the etcd lease; a leader frozen this long loses leadership', positiveInt, 10)
    .option('--heartbeat-timeout-ms <ms>', 'coordinator: a worker is lost after this long without a frame', positiveInt, 2_000)
    .option('--watchdog-interval-ms <ms>', 'coordinator: how often liveness is judged', positiveInt, 100)
    .option('--handshake-timeout-ms <ms>', 'coordinator: added to the heartbeat timeout, the deadline for a TLS handshake and a first frame; worker: its TCP connect and TLS handshake must finish within this', nonNegativeInt, 5_000)
    .option('--tls-cert <file>', 'TLS: the certificate (PEM) of the coordinator\'s control port, or of a worker\'s data port')
    .option('--tls-key <file>', 'TLS: its private key (PEM)')
    .option('--tls-client-ca <file>', 'coordinator: mTLS: require client certificates this CA signed (PEM); a worker id belongs to the certificate that registered it')
    .option('--tls-ca <file>', 'worker: verify the coordinator and data peers against this CA (PEM)')
    .option('--tls-client-cert <file>', 'worker: under mTLS, its certificate (PEM)')
    .option('--tls-client-key <file>', 'worker: under mTLS, its private key (PEM)')
    .option('--tls-no-verify-hostname', "worker: check certificate chains but not that they name the host (needs --tls-ca)")
    .option('--insecure', 'run on a non-loopback address without TLS or CLINK_AUTH_TOKEN (refused otherwise; warned at every start)', false)
    .option('--max-pending-connections <n>', 'coordinator: connections admitted at once', nonNegativeInt, 64)
    .option('--outbound-stall-timeout-ms <ms>', 'coordinator: a worker whose frames make no progress this long is lost (0 = off)', nonNegativeInt, 10_000)
    .option('--outbound-flush-timeout-ms <ms>', 'coordinator: how long shutdown lets queued frames be written', nonNegativeInt, 1_000)
    .option('--max-outbound-control-frames <n>', 'coordinator: control frames queued per worker', positiveInt, 10_000)
    .option('--max-outbound-control-bytes <n>', 'coordinator: bytes of control frames queued per worker', positiveInt, 64 * 1024 * 1024)
    .option('--max-outbound-bulk-bytes <n>', 'coordinator: bytes of Deploy frames queued per worker', positiveInt, 1024 * 1024 * 1024)
    .addOption(slotSharingOption('coordinator: '))
    .option('--submit-wait-for-slots-ms <ms>', 'coordinator: how long a submit waits for free slots', nonNegativeInt, 0)
    .option('--restart-drain-timeout-ms <ms>', "coordinator: a restart fails the job when a survivor has not drained by then", positiveInt, 120_000)
    .option('--restart-capacity-timeout-ms <ms>', 'coordinator: how long a restart waits for free slots', nonNegativeInt, 180_000)
    .option('--restart-budget-reset-after-ms <ms>', 'coordinator: a checkpoint this long after the last restart forgives the restarts spent', positiveInt, 600_000)
    .option('--max-region-retries <n>', "coordinator: default retries of each failed subtask of a job without checkpoints (its failover region re-runs from the beginning)", nonNegativeInt, 0)
    .addOption(renamedFlag('--max-restarts <n>', 'maxRegionRetries', nonNegativeInt))
    .option('--restart-backoff-initial-ms <ms>', "coordinator: a job's second restart (or retry) waits this long, each later one twice as long", nonNegativeInt, 1_000)
    .option('--restart-backoff-max-ms <ms>', 'coordinator: the longest wait between restarts of a job', nonNegativeInt, 60_000)
    .option('--max-client-sessions <n>', 'coordinator: client sessions open at once; more are refused as busy', positiveInt, 256)
    .option('--client-idle-timeout-ms <ms>', 'coordinator: a client session with no request (and no job of its own running) is closed after this long', positiveInt, 300_000)
    .option('--max-client-outbound-bytes <n>', "coordinator: unread reply bytes a client may have queued before it is dropped", positiveInt, 16 * 1024 * 1024)
    .option('--frame-body-timeout-ms <ms>', 'coordinator: a frame begun on a session must be complete within this long of its first byte', positiveInt, 30_000)
    // worker
    .option('--id <id>', 'worker: stable worker id [default: host-pid]')
    .option('--coordinator-host <host>', 'worker: the coordinator host', '127.0.0.1')
    .option('--coordinator-port <n>', 'worker: the coordinator port', positiveInt, 6123)
    .option('--slots <n>', 'worker: subtasks it runs at once', positiveInt, 1)
    .option('--data-host <host>', 'worker: the host other workers reach its data port on', '127.0.0.1')
    .option('--heartbeat-interval-ms <ms>', 'worker: heartbeat period', positiveInt, 500)
    .option('--peer-update-timeout-ms <ms>', 'worker: how long a deployed subtask waits for its peers', positiveInt, 30_000)
    .option('--coordinator-heartbeat-timeout-ms <ms>', 'worker: end the session when a v2 coordinator sends nothing this long (0 = off)', nonNegativeInt, 3_000)
    .option('--reconnect-initial-backoff-ms <ms>', 'worker: first wait before registering again after losing the coordinator', positiveInt, 100)
    .option('--reconnect-max-backoff-ms <ms>', 'worker: longest wait between registration attempts (full jitter below it)', positiveInt, 5_000)
    .option('--batch-size <n>', 'worker: records per batch between tasks', positiveInt, 1_000)
    .option('--batch-linger-ms <ms>', 'worker: how long a partly filled batch may wait to fill', nonNegativeInt, 0)
    .addOption(new Option('--task-isolation <mode>', "worker: where user code runs: a thread per job (its heartbeats never wait on it), or none (the session's event loop)").choices(['thread', 'none']).default('thread'))
    .option('--task-stall-timeout-ms <ms>', "worker: a job's thread that makes no progress this long is terminated and its subtasks fail", positiveInt, 30_000)
    .option('--task-heap-mb <mb>', "worker: heap limit of each job's thread; past it its subtasks fail with 'out of memory'", positiveInt, 2_048)
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const n = (k: string): number => o[k] as number;
      checkTlsFlags(cmd, o as TlsFlags, o.role as TlsRole);
      const exposure = exposureVerdict({
        role: o.role as 'coordinator' | 'worker',
        hosts:
          o.role === 'coordinator'
            ? [
                { host: o.bindHost as string, flag: '--bind-host' },
                { host: (o.advertiseHost as string | undefined) ?? '', flag: '--advertise-host' },
              ]
            : [{ host: o.dataHost as string, flag: '--data-host' }],
        tls: o.role === 'coordinator' ? o.tlsCert !== undefined : o.tlsCa !== undefined,
        token: authTokenFromEnv() !== undefined,
        insecure: o.insecure === true,
      });
      if (exposure.refusal) cmd.error(`error: ${exposure.refusal}`);
      if (o.role === 'coordinator' && o.etcdEndpoints && !o.haDir) {
        cmd.error("error: --etcd-endpoints needs --ha-dir too: the directory (shared by every coordinator) where running jobs are persisted for a successor");
      }
      const { nodeCommand } = await import('./node.js');
      exitCode = await nodeCommand({
        role: o.role as 'coordinator' | 'worker',
        tls: o as TlsFlags,
        ...(exposure.warning ? { exposureWarning: exposure.warning } : {}),
        ha: {
          ...(o.haDir ? { haDir: o.haDir as string } : {}),
          allowUnsafeLocks: o.haAllowUnsafeLocks === true,
          ...(o.etcdEndpoints ? { etcdEndpoints: o.etcdEndpoints as string[] } : {}),
          etcdCluster: o.etcdCluster as string,
          etcdLeaseTtlS: n('etcdLeaseTtlS'),
        },
        ...(o.readyFile ? { readyFile: o.readyFile as string } : {}),
        ...(o.httpPort !== undefined ? { httpPort: n('httpPort') } : {}),
        ...(o.httpStaticDir ? { httpStaticDir: o.httpStaticDir as string } : {}),
        ...(o.otlpEndpoint ? { otlp: { endpoint: o.otlpEndpoint as string, intervalMs: n('otlpIntervalMs') } } : {}),
        coordinator: {
          port: n('port'),
          bindHost: o.bindHost as string,
          advertiseHost: (o.advertiseHost as string | undefined) ?? '',
          heartbeatTimeoutMs: n('heartbeatTimeoutMs'),
          watchdogIntervalMs: n('watchdogIntervalMs'),
          handshakeTimeoutMs: n('handshakeTimeoutMs'),
          maxPendingConnections: Math.max(1, n('maxPendingConnections')),
          outboundStallTimeoutMs: n('outboundStallTimeoutMs'),
          outboundFlushTimeoutMs: n('outboundFlushTimeoutMs'),
          maxOutboundControlFrames: n('maxOutboundControlFrames'),
          maxOutboundControlBytes: n('maxOutboundControlBytes'),
          maxOutboundBulkBytes: n('maxOutboundBulkBytes'),
          submitWaitForSlotsMs: n('submitWaitForSlotsMs'),
          slotSharing: o.slotSharing === 'on',
          restartDrainTimeoutMs: n('restartDrainTimeoutMs'),
          restartCapacityTimeoutMs: n('restartCapacityTimeoutMs'),
          restartBudgetResetAfterMs: n('restartBudgetResetAfterMs'),
          maxRegionRetries: renamed(o, 'maxRegionRetries', 'maxRestarts'),
          maxClientSessions: n('maxClientSessions'),
          clientIdleTimeoutMs: n('clientIdleTimeoutMs'),
          maxClientOutboundBytes: n('maxClientOutboundBytes'),
          frameBodyTimeoutMs: n('frameBodyTimeoutMs'),
          restartBackoffInitialMs: n('restartBackoffInitialMs'),
          restartBackoffMaxMs: n('restartBackoffMaxMs'),
        },
        worker: {
          ...(o.id ? { id: o.id as string } : {}),
          coordinatorHost: o.coordinatorHost as string,
          coordinatorPort: n('coordinatorPort'),
          slots: n('slots'),
          dataHost: o.dataHost as string,
          heartbeatIntervalMs: n('heartbeatIntervalMs'),
          peerUpdateTimeoutMs: n('peerUpdateTimeoutMs'),
          batchSize: n('batchSize'),
          batchLingerMs: n('batchLingerMs'),
          coordinatorHeartbeatTimeoutMs: n('coordinatorHeartbeatTimeoutMs'),
          taskIsolation: o.taskIsolation as 'thread' | 'none',
          taskStallTimeoutMs: n('taskStallTimeoutMs'),
          taskHeapMb: n('taskHeapMb'),
        },
        reconnect: { initialBackoffMs: n('reconnectInitialBackoffMs'), maxBackoffMs: n('reconnectMaxBackoffMs') },
      });
    });

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed the message (and help) to stderr
      exitCode = err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    } else {
      process.stderr.write(describeError(err) + '\n');
      exitCode = exitCodeOf(err);
    }
  } finally {
    uninstallInterrupts?.();
  }
  return exitCode;
}
