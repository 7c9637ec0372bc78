/** `clink run <job>`: compile a job module and run it on the local runtime in this process. */
import { loadJobModule } from '../loader/index.js';
import { LocalExecution, type JobResult } from '../runtime/index.js';
import { buildJob } from '../sdk/index.js';
import { formatTable } from './table.js';

export interface RunCommandOptions {
  parallelism?: number;
  params: Record<string, string>;
  progress: boolean;
  output: 'table' | 'json';
  maxRows: number;
}

const fmt = new Intl.NumberFormat('en-US');

function totals(exec: LocalExecution): { in: number; out: number } {
  const m = exec.metrics();
  const sources = exec.plan.tasks.map((t, i) => ({ t, m: m[i]! })).filter((x) => x.t.inputs.length === 0);
  const sinks = exec.plan.tasks.map((t, i) => ({ t, m: m[i]! })).filter((x) => x.t.outputs.length === 0);
  return { in: sources.reduce((n, x) => n + x.m.recordsIn, 0), out: sinks.reduce((n, x) => n + x.m.recordsOut, 0) };
}

export async function runCommand(jobPath: string, o: RunCommandOptions): Promise<JobResult> {
  const loaded = await loadJobModule(jobPath);
  const built = buildJob(loaded.job, { ...(o.parallelism ? { parallelism: o.parallelism } : {}), params: o.params });
  const exec = new LocalExecution(built);
  const tty = o.progress && process.stderr.isTTY;
  const progress = (final: boolean): void => {
    const t = totals(exec);
    const line = `[clink] ${loaded.job.name}  ${(exec.elapsedMs / 1000).toFixed(1)}s  in ${fmt.format(t.in)} records  out ${fmt.format(t.out)} records`;
    if (tty) process.stderr.write(`\r\x1b[2K${line}${final ? '\n' : ''}`);
    else if (final && o.progress) process.stderr.write(line + '\n');
  };
  const timer = tty ? setInterval(() => progress(false), 250) : undefined;
  const stop = (): void => exec.cancel('cancelled (interrupted)');
  process.once('SIGINT', stop);
  try {
    const result = await exec.done;
    progress(true);
    printResults(result, o);
    process.stderr.write(
      `job '${loaded.job.name}' finished in ${(result.durationMs / 1000).toFixed(2)} s (parallelism ${built.spec.defaultParallelism})\n`,
    );
    return result;
  } finally {
    if (timer) clearInterval(timer);
    process.off('SIGINT', stop);
  }
}

function printResults(result: JobResult, o: RunCommandOptions): void {
  const names = Object.keys(result.collected);
  if (names.length === 0) return;
  if (o.output === 'json') {
    process.stdout.write(JSON.stringify(result.collected) + '\n');
    return;
  }
  for (const name of names) {
    const rows = result.collected[name]!;
    process.stdout.write(`\n${name} (${rows.length} rows)\n${formatTable(rows, o.maxRows)}\n`);
  }
}
