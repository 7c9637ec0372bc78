/** Runs SQL text in a fresh session, in this process: the last statement's plan and collected rows. */
import assert from 'node:assert/strict';
import { BUILTIN_CAPABILITIES } from '../../src/connectors/index.js';
import { runJob } from '../../src/index.js';
import { SqlCatalog, SqlSession, sqlJobDefinition } from '../../src/sql/index.js';

export async function runSql(
  text: string,
  options: { parallelism?: number; params?: Record<string, string> } = {},
): Promise<{ plan: string; rows: Record<string, unknown>[] }> {
  const parallelism = options.parallelism ?? 2;
  const params = options.params ?? {};
  const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
  const results = await session.execute(text, { parallelism, params });
  const last = results.at(-1)!;
  if (last.kind !== 'job') assert.fail(`the last statement is not a query (${last.kind})`);
  const r = await runJob(sqlJobDefinition({ name: last.job.name, version: '1' }, last.job.script), {
    parallelism,
    params,
  });
  return {
    plan: last.job.explain,
    rows: (r.collected[last.job.collect ?? 'result'] ?? []) as Record<string, unknown>[],
  };
}
