/**
 * `clink lint [job] [the flags of run, submit and node]`: the checks a submission and a node are gated
 * on, without a cluster. Exit 0 clean (warnings print but do not fail), 1 at least one error, 2 bad usage.
 */
import { readFile } from 'node:fs/promises';
import type { CheckpointSettings } from '../client/index.js';
import { ClinkError } from '../errors.js';
import { errorsOf, formatFindings, jobFindings, lintError, type Finding } from '../lint/index.js';
import { loadJobModule, typecheckJob } from '../loader/index.js';
import { checkRestore, resolveRestore } from '../coordinator/index.js';
import { createPhysicalPlan, type JobGraphSpec } from '../plan/index.js';
import { buildJob } from '../sdk/index.js';
import type { Command } from 'commander';
import { nodeFindings } from './node-lint.js';
import { givenNodeFlags } from './node-flag-table.js';
import { tlsFlagProblems, type TlsFlags } from './tls-flags.js';
import { meshFlags, type MeshFlags } from './options.js';

export interface LintCommandInput {
  /** A job module, or --graph-json: the graph to check (neither: only the settings). */
  job?: string;
  graphJson?: string;
  typecheck: boolean;
  parallelism?: number;
  params: Record<string, string>;
  guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
  settings: CheckpointSettings;
  /** The coordinator's --max-region-retries (its default when not given). */
  coordinatorRegionRetries: number;
  slotSharing: boolean;
  availableSlots?: number;
  autoscale?: { min: number; max: number };
  /** Findings on the node and TLS flags, made where the command line is parsed. */
  flagFindings: Finding[];
  output: 'text' | 'json';
}

/**
 * The lint's findings on node and TLS flags: as `role`'s node when given; else as each role whose own
 * flags were given (a coordinator's checks with clink node's defaults for the rest); else the TLS
 * flags as a client's.
 */
export function lintedFlags(
  role: 'coordinator' | 'worker' | undefined,
  o: Record<string, unknown>,
  cmd: Command,
): Finding[] {
  const given = givenNodeFlags(cmd);
  const roles = role ? [role] : (['coordinator', 'worker'] as const).filter((r) => given.some((g) => g.role === r));
  if (roles.length === 0) return tlsFlagProblems(o as TlsFlags, 'client').map((m) => lintError('tls-flags', m));
  return roles.flatMap(
    (r) => nodeFindings(r, o, role ? given : given.filter((g) => g.role === r || g.role === 'both')).findings,
  );
}

/** A mesh run's flags (`--lead`, `--join` and their partners) as `clink run` would refuse them. */
export function meshFlagFindings(o: MeshFlags): Finding[] {
  try {
    meshFlags(o);
    return [];
  } catch (err) {
    return [asFinding('mesh-flags', err)];
  }
}

/** A failure to load or build the job, as a finding: the submit would be refused with it. */
function asFinding(check: string, err: unknown): Finding {
  if (err instanceof ClinkError) return lintError(check, err.message, err.code);
  throw err;
}

async function graphOf(
  i: LintCommandInput,
): Promise<{ spec?: JobGraphSpec; rebuild?: () => JobGraphSpec; findings: Finding[] }> {
  if (i.graphJson) {
    let text: string;
    try {
      text = await readFile(i.graphJson, 'utf8');
    } catch (err) {
      return {
        findings: [
          lintError(
            'graph-invalid',
            `cannot read --graph-json ${i.graphJson}: ${(err as Error).message}`,
            'CLINK_ERR_PLAN',
          ),
        ],
      };
    }
    try {
      return { spec: JSON.parse(text) as JobGraphSpec, findings: [] };
    } catch (err) {
      return {
        findings: [
          lintError(
            'graph-invalid',
            `--graph-json ${i.graphJson} is not JSON: ${(err as Error).message}`,
            'CLINK_ERR_PLAN',
          ),
        ],
      };
    }
  }
  if (!i.job) return { findings: [] };
  try {
    if (i.typecheck) await typecheckJob(i.job);
    const loaded = await loadJobModule(i.job);
    const build = (): JobGraphSpec => {
      const { spec } = buildJob(loaded.job, { parallelism: i.parallelism ?? 1, params: i.params });
      if (i.guarantee) spec.job.guarantee = i.guarantee;
      return spec;
    };
    return { spec: build(), rebuild: build, findings: [] };
  } catch (err) {
    return { findings: [asFinding('job-load', err)] };
  }
}

/**
 * `--restore-from-dir`: the coordinator's restore gate, run here on the checkpoint it names (layout,
 * operators, each declared state's schema against the one it was checkpointed with).
 */
async function restoreFindings(spec: JobGraphSpec, settings: CheckpointSettings): Promise<Finding[]> {
  try {
    const point = await resolveRestore(settings.restoreFromDir, settings.restoreFromCheckpointId);
    checkRestore(point.marker, createPhysicalPlan(spec), spec.job.name, settings.allowNonRestoredState);
    return [];
  } catch (err) {
    const code = err instanceof ClinkError ? err.code : undefined;
    return [lintError('restore-compatibility', (err as Error).message, code)];
  }
}

export async function lintCommand(i: LintCommandInput): Promise<number> {
  const graph = await graphOf(i);
  const findings: Finding[] = [...i.flagFindings, ...graph.findings];
  const checks = {
    settings: i.settings,
    coordinatorRegionRetries: i.coordinatorRegionRetries,
    slotSharing: i.slotSharing,
    ...(i.availableSlots !== undefined ? { availableSlots: i.availableSlots } : {}),
    ...(i.autoscale ? { autoscale: i.autoscale } : {}),
  };
  findings.push(...jobFindings(graph.spec, checks, graph.rebuild));
  if (graph.spec && i.settings.restoreFromDir) findings.push(...(await restoreFindings(graph.spec, i.settings)));
  process.stdout.write(formatFindings(findings, i.output));
  return errorsOf(findings).length > 0 ? 1 : 0;
}
