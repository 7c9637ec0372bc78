/**
 * Whether a job's build function is deterministic: every process (the submitter, the coordinator, each
 * worker) runs it again and binds user functions to operators by the ids it mints, so a build that
 * reads the clock, random numbers or the environment plans one job and runs another. Built twice here
 * and compared.
 */
import type { JobGraphSpec } from '../plan/index.js';
import { lintError, type Finding } from './finding.js';

/** The first place two JSON values differ (`operators[2].options.seed: 1 vs 2`), or undefined. */
export function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (Object.is(a, b)) return undefined;
  const show = (v: unknown): string => (v === undefined ? 'absent' : JSON.stringify(v).slice(0, 60));
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  ) {
    return `${path || 'the graph'}: ${show(a)} vs ${show(b)}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const k of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
    const d = firstDifference(ra[k], rb[k], path ? `${path}.${k}` : k);
    if (d) return d;
  }
  return undefined;
}

/** Compare a job's graph with a second build of it (`again` builds it once more). */
export function determinismFindings(spec: JobGraphSpec, again: () => JobGraphSpec): Finding[] {
  const where = firstDifference(JSON.parse(JSON.stringify(spec)), JSON.parse(JSON.stringify(again())));
  if (!where) return [];
  return [
    lintError(
      'nondeterministic-build',
      `the job's build function is not deterministic: two builds gave different graphs (at ${where}); every worker builds it again, so it would run another job than the one planned: do not read the clock, random numbers or anything that changes while building (pass values with --param)`,
      'CLINK_ERR_JOB_DEFINITION',
    ),
  ];
}
