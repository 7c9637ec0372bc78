/**
 * SQL over HTTP. POST /api/v1/jobs/sql takes SQL statements as the raw body and runs them in the
 * coordinator's session (its catalog persisted with --sql-catalog-dir): catalog statements answer at
 * once, EXPLAIN and mode=explain with the plan, mode=compile with the job module, and mode=submit (the
 * default) submits each query's job through the same planning thread and gates as POST /api/v1/jobs.
 * The other query parameters are that route's settings. GET /api/v1/catalog lists the tables and views.
 * Requests run one at a time: a statement sees the catalog the one before it left. The session lives in
 * a thread of its own (sql-thread.ts): nothing SQL loads or plans runs on the coordinator's event loop.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  checkpointSettingsOfSets,
  submitJobMessage,
  submitSettingsFromQuery,
  type SubmitSettings,
} from '../client/index.js';
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import type { Coordinator } from '../coordinator/index.js';
import { defaultCacheDir, planInThread } from '../loader/index.js';
import { sendError } from './errors.js';
import { ErrorReply } from './schemas.js';
import { submitFailure } from './submit-route.js';

import { SqlStatementError, SqlThread } from './sql-thread.js';

const MODES = ['explain', 'compile', 'submit'] as const;
type Mode = (typeof MODES)[number];
/** The largest SQL text a request may carry: 64 KiB plans in well under a second (2,000 computed columns, 30 KB: 0.36 s). */
export const MAX_SQL_BYTES = 64 * 1024;

const SqlReply = {
  type: 'object',
  properties: {
    ok: { type: 'boolean' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        description:
          'one per statement: kind message (catalog statements), explain (plan), compiled (module), or job (submitted: jobId)',
        properties: { kind: { type: 'string' }, statement: { type: 'string' } },
        required: ['kind', 'statement'],
        additionalProperties: true,
      },
    },
  },
  required: ['ok', 'results'],
};
const SqlErrorReply = {
  ...ErrorReply,
  description:
    'a refusal; a statement that does not parse or bind adds ok: false, error and position (1-based byte offset)',
};

export function sqlRoutes(
  api: FastifyInstance,
  coordinator: () => Coordinator,
  catalogDir: string | undefined,
  planTimeoutMs?: number,
): void {
  const session = new SqlThread({ catalogDir, connectors: BUILTIN_CAPABILITIES.map((c) => c.name) });
  api.addHook('onClose', () => session.close());
  let queue: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(f: () => Promise<T>): Promise<T> => {
    const run = queue.then(f, f);
    queue = run.catch(() => undefined);
    return run;
  };

  api.addContentTypeParser(
    ['application/sql', 'text/x-sql'],
    { parseAs: 'string', bodyLimit: MAX_SQL_BYTES },
    (_req, body, done) => done(null, body),
  );
  api.post(
    '/api/v1/jobs/sql',
    {
      bodyLimit: MAX_SQL_BYTES,
      schema: {
        summary:
          'run SQL statements (raw body: text/plain or application/sql); mode=explain|compile|submit, other settings as POST /api/v1/jobs takes them',
        response: {
          200: SqlReply,
          201: SqlReply,
          400: SqlErrorReply,
          401: ErrorReply,
          404: ErrorReply,
          409: ErrorReply,
          500: ErrorReply,
          503: ErrorReply,
          507: ErrorReply,
        },
      },
    },
    async (req, reply) => {
      const { mode: modeParam, ...query } = req.query as Record<string, string | string[]>;
      const mode = (modeParam ?? 'submit') as Mode;
      if (!MODES.includes(mode))
        return sendError(
          reply,
          400,
          'CLINK_ERR_INVALID_ARGUMENT',
          `mode=${String(modeParam)}: use explain, compile or submit`,
        );
      let settings: SubmitSettings;
      try {
        settings = submitSettingsFromQuery(query);
      } catch (err) {
        return sendError(reply, 400, 'CLINK_ERR_INVALID_ARGUMENT', (err as Error).message);
      }
      if (typeof req.body !== 'string' || req.body.trim() === '')
        return sendError(
          reply,
          400,
          'CLINK_ERR_INVALID_ARGUMENT',
          'send SQL statements as the body (Content-Type: text/plain or application/sql)',
        );
      const text = req.body;
      return oneAtATime(async () => {
        let results;
        try {
          const r = await session.request({
            op: 'execute',
            text,
            mode: mode === 'explain' ? 'explain' : 'compile',
            parallelism: settings.parallelism ?? 1,
            params: settings.params,
            ...(settings.name ? { name: settings.name } : {}),
          });
          results = r.results ?? [];
        } catch (err) {
          if (err instanceof SqlStatementError)
            return sendError(reply, 400, 'CLINK_ERR_PLAN', err.message, {
              ok: false,
              error: err.refusal.detail,
              position: err.refusal.position,
              excerpt: err.refusal.excerpt,
            });
          const failure = submitFailure(err);
          return sendError(
            reply,
            failure.status,
            failure.code,
            failure.message.replace(/^submit refused: /, 'SQL statement refused: '),
          );
        }
        const out: Record<string, unknown>[] = [];
        let submitted = false;
        for (const r of results) {
          if (r.kind !== 'job') out.push({ ...r });
          else if (mode === 'compile')
            out.push({
              kind: 'compiled',
              statement: r.statement,
              name: r.job.name,
              module: r.job.moduleSource,
              plan: r.job.explain,
              columns: r.job.columns,
            });
          else {
            try {
              out.push({
                kind: 'job',
                statement: r.statement,
                ...(await submit(
                  coordinator(),
                  r.job.moduleSource,
                  r.job.name,
                  { ...settings, checkpoint: { ...settings.checkpoint, ...checkpointSettingsOfSets(r.settings) } },
                  planTimeoutMs,
                )),
              });
              submitted = true;
            } catch (err) {
              const failure = submitFailure(err);
              return sendError(reply, failure.status, failure.code, failure.message, { ok: false, results: out });
            }
          }
        }
        return reply.code(submitted ? 201 : 200).send({ ok: true, results: out });
      });
    },
  );
  api.get(
    '/api/v1/catalog',
    {
      schema: {
        summary: "the SQL session's tables and views, each with its CREATE statement",
        response: {
          200: {
            type: 'object',
            properties: { objects: { type: 'array', items: { type: 'object', additionalProperties: true } } },
          },
        },
      },
    },
    async () => {
      const r = await oneAtATime(() => session.request({ op: 'catalog' }));
      return { objects: r.objects ?? [] };
    },
  );
}

/** A compiled SQL job through the path every HTTP submit takes: planned in a bounded thread, then the gates. */
async function submit(
  c: Coordinator,
  moduleSource: string,
  name: string,
  settings: SubmitSettings,
  planTimeoutMs?: number,
): Promise<Record<string, unknown>> {
  const scratch = await mkdtemp(join(tmpdir(), 'clink-sql-'));
  try {
    const path = join(scratch, `${name}.js`);
    await writeFile(path, moduleSource);
    const parallelism = settings.parallelism ?? 1;
    const planned = await planInThread(
      { module: { path }, label: `SQL job ${name}`, parallelism, params: settings.params, cacheDir: defaultCacheDir() },
      planTimeoutMs ? { timeoutMs: planTimeoutMs } : {},
    );
    if (settings.guarantee) planned.spec.job.guarantee = settings.guarantee;
    const m = submitJobMessage(
      {
        module: planned.module,
        spec: planned.spec,
        params: settings.params,
        buildParallelism: parallelism,
        checkpoint: settings.checkpoint,
        ...(settings.name ? { name: settings.name } : {}),
        ...(settings.autoscale ? { autoscale: settings.autoscale } : {}),
      },
      true,
    );
    const job = await c.submitFromOutside(m);
    return { jobId: job.id, name: job.name, moduleSha256: planned.module.sha256, state: job.state };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
