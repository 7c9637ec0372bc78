/**
 * The `clink` command line. Commands are thin: they parse flags and call the library.
 *
 * @example
 * process.exitCode = await main(process.argv);
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { ClinkError, UserCodeError } from '../errors.js';
import { parseCoordinators, type Endpoint } from './endpoint.js';
import type { TlsFlags } from './tls-flags.js';
import { installInterrupts } from './interrupt.js';
import { checkTlsFlags, nonNegativeInt, operatorTarget, positiveInt } from './flags.js';
import {
  addOptions,
  autoscaleOptions,
  checkpointOptions,
  checkpointSettings,
  coordinatorTargetOptions,
  DEFAULT_COORDINATOR,
  jobOptions,
  localRunOptions,
  meshOptions,
  meshFlags,
  type MeshFlags,
  outputOptions,
  submitOptions,
  target,
  typecheckOptions,
  type CheckpointFlags,
  type JobFlags,
  type TargetFlags,
} from './options.js';
import { addNodeCommand } from './node-command.js';
import { nodeOptions } from './node-flag-table.js';

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

/** A Node system error (EACCES, ENOSPC, ECONNREFUSED, ...): the machine said no, not a bug in clink. */
function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return (
    err instanceof Error &&
    typeof (err as NodeJS.ErrnoException).code === 'string' &&
    typeof (err as NodeJS.ErrnoException).syscall === 'string'
  );
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
  if (err instanceof ClinkError)
    return err.code === 'CLINK_ERR_BUSY'
      ? EXIT_TEMPFAIL
      : err.code === 'CLINK_ERR_INTERRUPTED'
        ? EXIT_INTERRUPTED
        : EXIT_JOB_FAILED;
  return isSystemError(err) ? EXIT_JOB_FAILED : EXIT_INTERNAL;
}

function clinkVersion(): string {
  const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };
  return pkg.version;
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
    .addOption(
      new Option(
        '--log-format <format>',
        'log lines as pretty text or JSON [default: pretty on a terminal, json otherwise]',
      )
        .choices(['pretty', 'json'])
        .env('CLINK_LOG_FORMAT'),
    )
    .addOption(
      new Option('--log-level <level>', "least severe log lines shown [default: info; 'error' for clink run]")
        .choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
        .env('CLINK_LOG_LEVEL'),
    )
    .hook('preAction', (cmd, action) => {
      if (['submit', 'jobs', 'cancel', 'savepoint', 'rescale', 'sql'].includes(action.name()))
        checkTlsFlags(action, action.opts<TlsFlags>(), 'client');
      if (action.name() !== 'node') uninstallInterrupts = installInterrupts();
      // Through the environment, so local worker processes and job threads log the same way.
      const o = cmd.opts<{ logFormat?: string; logLevel?: string }>();
      if (o.logFormat) process.env.CLINK_LOG_FORMAT = o.logFormat;
      if (o.logLevel) process.env.CLINK_LOG_LEVEL = o.logLevel;
    });
  let exitCode = EXIT_OK;
  let uninstallInterrupts: (() => void) | undefined;

  addOptions(
    program
      .command('run')
      .description('compile a job module and run it on this machine')
      .argument('<job>', 'job file (.ts or .js)'),
    [
      ...jobOptions(),
      ...outputOptions(),
      ...checkpointOptions(),
      ...typecheckOptions(),
      ...localRunOptions(),
      ...meshOptions(),
    ],
  ).action(
    async (
      job: string,
      o: JobFlags &
        CheckpointFlags &
        MeshFlags & {
          progress: boolean;
          output: 'table' | 'json';
          maxRows: number;
          workers?: number;
          batchSize: number;
          batchLingerMs: number;
          debloatTargetMs: number;
          slotSharing: 'on' | 'off';
          typecheck: boolean;
        },
    ) => {
      const { runCommand } = await import('./run.js');
      await runCommand(job, {
        mesh: meshFlags(o),
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
        debloatTargetMs: o.debloatTargetMs,
        slotSharing: o.slotSharing === 'on',
        typecheck: o.typecheck,
      });
    },
  );

  program
    .command('init')
    .description('create a job project: package.json depending on this clink, tsconfig, an example job and its test')
    .argument('<dir>', 'a new or empty directory')
    .option('--name <name>', "the project's package name [default: the directory's name]")
    .option(
      '--clink <spec>',
      'how package.json depends on clink [default: this checkout by path, or its version when installed]',
    )
    .option('--no-install', 'do not run npm install in it')
    .action(async (dir: string, o: { name?: string; clink?: string; install: boolean }) =>
      (await import('./init.js')).initCommand(dir, {
        ...(o.name ? { name: o.name } : {}),
        ...(o.clink ? { clink: o.clink } : {}),
        install: o.install,
      }),
    );

  addOptions(
    program
      .command('plan')
      .description("print a job's plan: operators, edges and chained tasks")
      .argument('<job>', 'job file'),
    jobOptions(),
  )
    .option('--json', 'print the JobGraphSpec as JSON')
    .action(async (job: string, o: JobFlags & { json?: boolean }) => {
      const { planCommand } = await import('./plan.js');
      await planCommand(job, {
        ...(o.parallelism ? { parallelism: o.parallelism } : {}),
        params: o.param,
        json: o.json === true,
      });
    });

  addOptions(
    program
      .command('submit')
      .description('submit a job to a coordinator and print its id')
      .argument('<job>', 'job file'),
    [
      ...jobOptions(),
      ...coordinatorTargetOptions(),
      ...outputOptions(),
      ...checkpointOptions(),
      ...typecheckOptions(),
      ...autoscaleOptions(),
      ...submitOptions(),
    ],
  ).action(
    async (
      job: string,
      o: JobFlags &
        CheckpointFlags &
        TargetFlags & {
          autoscale?: { min: number; max: number };
          name?: string;
          wait?: boolean;
          progress: boolean;
          output: 'table' | 'json';
          maxRows: number;
          typecheck: boolean;
        },
    ) => {
      const { submitCommand } = await import('./client.js');
      await submitCommand(job, {
        checkpoint: checkpointSettings(o),
        ...(o.guarantee ? { guarantee: o.guarantee } : {}),
        ...(o.autoscale ? { autoscale: o.autoscale } : {}),
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
    },
  );

  // -e and -f run in the order given, so each source is kept in one list as commander reads it.
  const sqlSources: { kind: 'text' | 'file'; value: string }[] = [];
  const sqlCommand = addOptions(
    program.command('sql').description('run SQL statements: from -e and -f, standard input, or an interactive shell'),
    [...jobOptions(), ...coordinatorTargetOptions(true), ...outputOptions(), ...checkpointOptions()],
  )
    .option(
      '-e, --execute <statements>',
      'SQL statements to run (repeatable; with -f, in the order given)',
      (v: string) => (sqlSources.push({ kind: 'text', value: v }), v),
    )
    .option(
      '-f, --file <file>',
      'a file of SQL statements to run (repeatable)',
      (v: string) => (sqlSources.push({ kind: 'file', value: v }), v),
    )
    .addOption(
      new Option(
        '--mode <mode>',
        'what a query or INSERT does: explain (print its plan), compile (print its job module, for clink submit), submit (run it)',
      )
        .choices(['explain', 'compile', 'submit'])
        .default('submit'),
    )
    .option(
      '--sql-catalog-dir <dir>',
      'keep the permanent tables and views in this directory (catalog.json) [default: the session only]',
    )
    .option('--name <name>', "the job's name [default: from the statement]")
    .option('--no-progress', 'do not show progress on standard error')
    .option(
      '--workers <n>',
      'without --coordinator: local worker processes (0 runs everything in this process) [default: one per core]',
      nonNegativeInt,
    );
  sqlCommand.action(
    async (
      o: JobFlags &
        CheckpointFlags &
        Omit<TargetFlags, 'coordinator'> & {
          coordinator?: Endpoint[];
          mode: 'explain' | 'compile' | 'submit';
          sqlCatalogDir?: string;
          name?: string;
          progress: boolean;
          output: 'table' | 'json';
          maxRows: number;
          workers?: number;
        },
    ) => {
      const { sqlCommand: run } = await import('./sql.js');
      // Without --coordinator (or CLINK_COORDINATOR, or an HA directory), jobs run on this machine.
      const remote = o.coordinator !== undefined || o.haDir !== undefined || o.etcdEndpoints !== undefined;
      await run({
        sources: sqlSources,
        mode: o.mode,
        ...(remote
          ? { coordinator: target({ ...o, coordinator: o.coordinator ?? parseCoordinators(DEFAULT_COORDINATOR) }) }
          : {}),
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
    },
  );

  addOptions(program.command('jobs').description('list running and recent jobs'), coordinatorTargetOptions())
    .option('--json', 'print JSON')
    .action(async (o: TargetFlags & { json?: boolean }) =>
      (await import('./client.js')).jobsCommand({ coordinator: target(o), json: o.json === true }),
    );

  addOptions(
    program
      .command('savepoint')
      .description('take a savepoint of a running job into a directory and print its path')
      .argument('<jobId>', 'the job id'),
    coordinatorTargetOptions(),
  )
    .requiredOption('--dir <dir>', 'where the savepoint goes')
    .option('--cancel', 'end the job once the savepoint is durable')
    .action(async (jobId: string, o: TargetFlags & { dir: string; cancel?: boolean }) =>
      (await import('./client.js')).savepointCommand(jobId, {
        coordinator: target(o),
        dir: o.dir,
        cancel: o.cancel === true,
      }),
    );

  addOptions(
    program
      .command('rescale')
      .description(
        "change a running job's parallelism through a checkpoint, in place or by drain and replan (no restart budget spent)",
      )
      .argument('<jobId>', 'the job id'),
    coordinatorTargetOptions(),
  )
    .option('--parallelism <n>', "the job's new parallelism (for operators without their own)", positiveInt)
    .option(
      '--operator <uid=n>',
      'the parallelism of the task (chain) that holds this operator, by its uid (repeatable)',
      operatorTarget,
    )
    .addOption(
      new Option(
        '--mode <mode>',
        'hot: replace only the tasks that change while the rest run on (refused when none would); replan: stop and redeploy all; auto: hot when it can',
      )
        .choices(['auto', 'hot', 'replan'])
        .default('auto'),
    )
    .action(
      async (
        jobId: string,
        o: TargetFlags & { parallelism?: number; operator?: Record<string, number>; mode: 'auto' | 'hot' | 'replan' },
        cmd: Command,
      ) => {
        const operators = o.operator ?? {};
        if (o.parallelism === undefined && Object.keys(operators).length === 0)
          cmd.error('error: give --parallelism <n> or --operator <uid>=<n>');
        await (
          await import('./client.js')
        ).rescaleCommand(jobId, { coordinator: target(o), parallelism: o.parallelism ?? 0, operators, mode: o.mode });
      },
    );

  addOptions(
    program.command('cancel').description('cancel a running job').argument('<jobId>', 'the job id'),
    coordinatorTargetOptions(),
  ).action(async (jobId: string, o: TargetFlags) =>
    (await import('./client.js')).cancelCommand(jobId, { coordinator: target(o) }),
  );

  program
    .command('connectors')
    .description('list the connectors this build has, with what each can promise')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => (await import('./connectors.js')).connectorsCommand(o.json === true));

  addNodeCommand(program, (code) => (exitCode = code));

  addOptions(
    program
      .command('lint')
      .description(
        'check a job and the flags of run, submit or node without a cluster: exit 0 clean (warnings allowed), 1 on an error',
      )
      .argument('[job]', 'job file'),
    [
      // The lint's own first; then every flag of run, submit and node (the first declaration of a flag wins).
      new Option(
        '--output <format>',
        'findings as text lines or one JSON document (table: text, so a run command line pastes as is)',
      )
        .choices(['text', 'table', 'json'])
        .default('text'),
      new Option(
        '--role <role>',
        "lint a node's flags as this role's (without it: each role whose own flags are given)",
      ).choices(['coordinator', 'worker']),
      new Option('--graph-json <file>', 'check this JobGraphSpec (clink plan --json) instead of a job module'),
      new Option('--available-slots <n>', "the cluster's slots: a job that needs more is an error").argParser(
        positiveInt,
      ),
      ...jobOptions(),
      ...checkpointOptions(),
      ...autoscaleOptions(),
      ...outputOptions(),
      ...typecheckOptions(),
      ...nodeOptions().map((n) => n.option),
      ...coordinatorTargetOptions(),
      ...localRunOptions(),
      ...meshOptions(),
      ...submitOptions(),
    ],
  ).action(
    async (
      job: string | undefined,
      o: JobFlags &
        CheckpointFlags &
        MeshFlags & {
          role?: 'coordinator' | 'worker';
          graphJson?: string;
          availableSlots?: number;
          autoscale?: { min: number; max: number };
          output: string;
          typecheck: boolean;
          slotSharing: 'on' | 'off';
        },
      cmd: Command,
    ) => {
      if (job && o.graphJson) cmd.error('error: give a job file or --graph-json, not both');
      const { lintCommand, lintedFlags, meshFlagFindings } = await import('./lint.js');
      exitCode = await lintCommand({
        ...(job ? { job } : {}),
        ...(o.graphJson ? { graphJson: o.graphJson } : {}),
        typecheck: o.typecheck,
        ...(o.parallelism ? { parallelism: o.parallelism } : {}),
        params: o.param,
        ...(o.guarantee ? { guarantee: o.guarantee } : {}),
        settings: checkpointSettings(o),
        coordinatorRegionRetries: 0,
        slotSharing: o.slotSharing === 'on',
        ...(o.availableSlots !== undefined ? { availableSlots: o.availableSlots } : {}),
        ...(o.autoscale ? { autoscale: o.autoscale } : {}),
        flagFindings: [...lintedFlags(o.role, o as unknown as Record<string, unknown>, cmd), ...meshFlagFindings(o)],
        output: o.output === 'json' ? 'json' : 'text',
      });
    },
  );

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
