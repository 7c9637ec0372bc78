/**
 * The `clink` command line. Commands are thin: they parse flags and call the library.
 *
 * @example
 * process.exitCode = await main(process.argv);
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ClinkError, UserCodeError } from '../errors.js';
import { planCommand } from './plan.js';
import { runCommand } from './run.js';

/** Exit codes: 0 success, 1 the job failed or could not be loaded, 2 bad usage, 70 an engine bug. */
export const EXIT_OK = 0;
export const EXIT_JOB_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERNAL = 70;

function parsePositiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number >= 1, got '${v}'`);
  return n;
}

function collectParam(v: string, acc: Record<string, string>): Record<string, string> {
  const i = v.indexOf('=');
  if (i <= 0) throw new InvalidArgumentError(`expected key=value, got '${v}'`);
  return { ...acc, [v.slice(0, i)]: v.slice(i + 1) };
}

function describeError(err: unknown): string {
  if (err instanceof UserCodeError) {
    const cause = err.cause instanceof Error ? err.cause.stack ?? String(err.cause) : String(err.cause);
    return `error: job failed: ${err.message}\n\ncaused by: ${cause}`;
  }
  if (err instanceof ClinkError) return `error: ${err.message}`;
  return `internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`;
}

export async function main(argv: string[]): Promise<number> {
  process.setSourceMapsEnabled(true);
  const program = new Command()
    .name('clink')
    .description('A distributed, stateful, exactly-once stream-processing engine for Node.js')
    .exitOverride()
    .showHelpAfterError();
  let exitCode = EXIT_OK;

  const common = (cmd: Command): Command =>
    cmd
      .addOption(new Option('-p, --parallelism <n>', 'default parallelism of operators').argParser(parsePositiveInt))
      .option('--param <key=value>', 'a job parameter, read as env.params.key (repeatable)', collectParam, {});

  common(program.command('run').description('compile a job module and run it on this machine').argument('<job>', 'job file (.ts or .js)'))
    .option('--no-progress', 'do not show progress on standard error')
    .addOption(new Option('--output <format>', 'how to print collected results').choices(['table', 'json']).default('table'))
    .option('--max-rows <n>', 'rows of each collected result to print', parsePositiveInt, 20)
    .action(async (job: string, o: { parallelism?: number; param: Record<string, string>; progress: boolean; output: 'table' | 'json'; maxRows: number }) => {
      await runCommand(job, { ...(o.parallelism ? { parallelism: o.parallelism } : {}), params: o.param, progress: o.progress, output: o.output, maxRows: o.maxRows });
    });

  common(program.command('plan').description("print a job's plan: operators, edges and chained tasks").argument('<job>', 'job file'))
    .option('--json', 'print the JobGraphSpec as JSON')
    .action(async (job: string, o: { parallelism?: number; param: Record<string, string>; json?: boolean }) => {
      await planCommand(job, { ...(o.parallelism ? { parallelism: o.parallelism } : {}), params: o.param, json: o.json === true });
    });

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed the message (and help) to stderr
      exitCode = err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    } else {
      process.stderr.write(describeError(err) + '\n');
      exitCode = err instanceof ClinkError ? EXIT_JOB_FAILED : EXIT_INTERNAL;
    }
  }
  return exitCode;
}
