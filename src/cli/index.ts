/**
 * The `clink` command line. Commands are thin: they parse flags and call the library.
 *
 * @example
 * process.exitCode = await main(process.argv);
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { ClinkError, UserCodeError } from '../errors.js';
import { parseCoordinators, type CoordinatorTarget, type Endpoint } from './endpoint.js';
import type { TlsFlags } from './tls-flags.js';
import { installInterrupts } from './interrupt.js';
import type { CheckpointSettings } from '../client/index.js';
import { checkTlsFlags, collectParam, intArg, nonNegativeInt, positiveInt, renamed, renamedFlag, slotSharingOption } from './flags.js';
import { addNodeCommand } from './node-command.js';

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
      if (['submit', 'jobs', 'cancel', 'savepoint', 'sql'].includes(action.name())) checkTlsFlags(action, action.opts<TlsFlags>(), 'client');
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
  // `local`: without --coordinator the command works on this machine (clink sql), so there is no default.
  const coordinatorOption = (cmd: Command, local = false): Command =>
    cmd
      .addOption(
        local
          ? new Option('--coordinator <host:port,...>', "submit to the cluster at this control port (clink node --port) [default: run on this machine]").env('CLINK_COORDINATOR').argParser(parseCoordinators)
          : new Option('--coordinator <host:port,...>', "the coordinator's control port (clink node --port); several: the HA coordinators, the first that answers leads")
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
    .option('--no-progress', 'with --wait, do not show progress on standard error')
    .action(async (job: string, o: JobFlags & CheckpointFlags & TargetFlags & { name?: string; wait?: boolean; progress: boolean; output: 'table' | 'json'; maxRows: number; typecheck: boolean }) => {
      const { submitCommand } = await import('./client.js');
      await submitCommand(job, {
        checkpoint: checkpointSettings(o),
        ...(o.guarantee ? { guarantee: o.guarantee } : {}),
        coordinator: target(o),
        ...(o.parallelism ? { parallelism: o.parallelism } : {}),
        params: o.param,
        ...(o.name ? { name: o.name } : {}),
        wait: o.wait === true,
        progress: o.progress,
        output: o.output,
        maxRows: o.maxRows,
        typecheck: o.typecheck,
      });
    });

  // -e and -f run in the order given, so each source is kept in one list as commander reads it.
  const sqlSources: { kind: 'text' | 'file'; value: string }[] = [];
  const sqlCommand = checkpointOptions(outputOptions(coordinatorOption(jobOptions(program.command('sql').description('run SQL statements: from -e and -f, standard input, or an interactive shell')), true)))
    .option('-e, --execute <statements>', 'SQL statements to run (repeatable; with -f, in the order given)', (v: string) => (sqlSources.push({ kind: 'text', value: v }), v))
    .option('-f, --file <file>', 'a file of SQL statements to run (repeatable)', (v: string) => (sqlSources.push({ kind: 'file', value: v }), v))
    .addOption(new Option('--mode <mode>', 'what a query or INSERT does: explain (print its plan), compile (print its job module, for clink submit), submit (run it)').choices(['explain', 'compile', 'submit']).default('submit'))
    .option('--sql-catalog-dir <dir>', 'keep the permanent tables and views in this directory (catalog.json) [default: the session only]')
    .option('--name <name>', "the job's name [default: from the statement]")
    .option('--no-progress', 'do not show progress on standard error')
    .option('--workers <n>', 'without --coordinator: local worker processes (0 runs everything in this process) [default: one per core]', nonNegativeInt);
  sqlCommand.action(async (o: JobFlags & CheckpointFlags & Omit<TargetFlags, 'coordinator'> & { coordinator?: Endpoint[]; mode: 'explain' | 'compile' | 'submit'; sqlCatalogDir?: string; name?: string; progress: boolean; output: 'table' | 'json'; maxRows: number; workers?: number }) => {
    const { sqlCommand: run } = await import('./sql.js');
    // Without --coordinator (or CLINK_COORDINATOR, or an HA directory), jobs run on this machine.
    const remote = o.coordinator !== undefined || o.haDir !== undefined || o.etcdEndpoints !== undefined;
    await run({
      sources: sqlSources,
      mode: o.mode,
      ...(remote ? { coordinator: target({ ...o, coordinator: o.coordinator ?? parseCoordinators(DEFAULT_COORDINATOR) }) } : {}),
      ...(o.sqlCatalogDir ? { catalogDir: o.sqlCatalogDir } : {}),
      ...(o.parallelism ? { parallelism: o.parallelism } : {}),
      params: o.param,
      ...(o.name ? { name: o.name } : {}),
      output: o.output,
      maxRows: o.maxRows,
      progress: o.progress,
      ...(o.workers !== undefined ? { workers: o.workers } : {}),
      checkpoint: checkpointSettings(o),
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


  addNodeCommand(program, (code) => (exitCode = code));

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
