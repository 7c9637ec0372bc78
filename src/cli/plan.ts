/** `clink plan <job>`: print the JobGraphSpec a job module produces and how it chains into tasks. */
import { loadJobModule } from '../loader/index.js';
import { createPhysicalPlan } from '../plan/index.js';
import { buildJob } from '../sdk/index.js';

export async function planCommand(
  jobPath: string,
  o: { parallelism?: number; params: Record<string, string>; json: boolean },
): Promise<void> {
  const { job, sha256 } = await loadJobModule(jobPath);
  const { spec } = buildJob(job, { ...(o.parallelism ? { parallelism: o.parallelism } : {}), params: o.params });
  const plan = createPhysicalPlan(spec);
  if (o.json) {
    process.stdout.write(JSON.stringify(spec, null, 2) + '\n');
    return;
  }
  const lines = [`job ${spec.job.name} ${spec.job.version} (module sha256 ${sha256.slice(0, 12)})`, 'tasks:'];
  for (const t of plan.tasks) {
    const ins = t.inputs
      .map((e) => `${e.kind} from ${e.source}${e.output ? ` (its ${e.output} records)` : ''}`)
      .join(', ');
    lines.push(`  [${t.parallelism}x] ${t.name}${ins ? `  <- ${ins}` : ''}`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}
