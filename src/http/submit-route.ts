/**
 * POST /api/v1/jobs: submit a job over HTTP. The module is a multipart upload (field `module`: a job
 * source file, .ts or .js, compiled here, or a bundle built by clink) or, as a JSON body
 * `{ "moduleSha256": "<hex>" }`, one the coordinator already holds. Its settings are query parameters,
 * read by the parser the CLI's flags use (a malformed one is a 400 naming it). The module is planned in
 * a bounded thread (its build function is user code), then goes through the coordinator's gates as any
 * submit does.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { submitJobMessage, submitSettingsFromQuery, SUBMIT_PARAMETERS, type SubmitSettings } from '../client/index.js';
import type { Coordinator } from '../coordinator/index.js';
import { ClinkError, type ErrorCode } from '../errors.js';
import { jobFindings } from '../lint/index.js';
import { bundleSdk, defaultCacheDir, planInThread, type PlanRequest } from '../loader/index.js';
import { sendError } from './errors.js';
import { ErrorReply } from './schemas.js';

/** The largest job module an upload may carry. */
export const MAX_UPLOAD_BYTES = 16 * 1024 * 1024;
const SOURCE_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs']);

/** How a refusal's code reads as an HTTP status. */
function statusOf(code: string): number {
  if (code === 'CLINK_ERR_MODULE_MISSING' || code === 'CLINK_ERR_NOT_FOUND') return 404;
  if (code === 'CLINK_ERR_NOT_ENOUGH_SLOTS') return 409;
  if (code === 'CLINK_ERR_BUSY' || code === 'CLINK_ERR_CANCELLED') return 503;
  if (code === 'CLINK_ERR_STORAGE') return 507;
  if (code === 'CLINK_ERR_ENVIRONMENT') return 500;
  return 400;
}

/** Disk errors of the coordinator's own machine: the upload or its compiled module could not be stored. */
const DISK_FULL = new Set(['ENOSPC', 'EDQUOT', 'EROFS']);

/** How a failed submit is answered: a refusal with its code, a full disk as 507, anything else a 500. */
export function submitFailure(err: unknown): { status: number; code: ErrorCode; message: string } {
  if (err instanceof ClinkError)
    return { status: statusOf(err.code), code: err.code, message: `submit refused: ${err.message}` };
  const sys = err as NodeJS.ErrnoException;
  if (typeof sys.code === 'string' && DISK_FULL.has(sys.code)) {
    return {
      status: 507,
      code: 'CLINK_ERR_STORAGE',
      message: `submit refused: the coordinator could not store the job module (${sys.code}${sys.path ? ` at ${sys.path}` : ''}): uploads go under ${tmpdir()} (TMPDIR) and compiled modules under ${defaultCacheDir()} (CLINK_CACHE_DIR); free space there or point them at a disk with room`,
    };
  }
  return {
    status: 500,
    code: 'CLINK_ERR_INTERNAL',
    message: `submit refused: internal error: ${(err as Error).message}`,
  };
}

const SubmitReply = {
  type: 'object',
  properties: {
    jobId: { type: 'string' },
    name: { type: 'string' },
    moduleSha256: { type: 'string', description: 'submit it again by this hash' },
    state: { type: 'string' },
    warnings: {
      type: 'array',
      description: "the lint's warnings on the job and its settings (clink lint prints the same)",
      items: {
        type: 'object',
        properties: { check: { type: 'string' }, message: { type: 'string' } },
        required: ['check', 'message'],
      },
    },
  },
  required: ['jobId', 'name', 'moduleSha256', 'state', 'warnings'],
  additionalProperties: true,
};
const SubmitQuery = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(SUBMIT_PARAMETERS).map(([name, p]) => [
      name,
      name === 'param'
        ? {
            anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
            description: `${p.doc} (as ${p.flag})`,
          }
        : { type: 'string', description: `${p.doc} (as ${p.flag})` },
    ]),
  ),
};

export function submitRoute(api: FastifyInstance, coordinator: () => Coordinator, planTimeoutMs?: number): void {
  void api.register(multipart, { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 8, parts: 9 } });
  api.post(
    '/api/v1/jobs',
    {
      schema: {
        summary:
          'submit a job: a multipart upload of its module (field "module"), or JSON { moduleSha256 } for one the coordinator holds; settings in the query',
        querystring: SubmitQuery,
        response: {
          201: SubmitReply,
          400: ErrorReply,
          401: ErrorReply,
          404: ErrorReply,
          409: ErrorReply,
          413: ErrorReply,
          500: ErrorReply,
          503: ErrorReply,
          507: ErrorReply,
        },
      },
    },
    async (req, reply) => {
      let settings: SubmitSettings;
      try {
        settings = submitSettingsFromQuery(req.query as Record<string, string | string[]>);
      } catch (err) {
        return sendError(reply, 400, 'CLINK_ERR_INVALID_ARGUMENT', (err as Error).message);
      }
      let scratch: string | undefined;
      try {
        scratch = await mkdtemp(join(tmpdir(), 'clink-upload-'));
        const module = await moduleOf(req, reply, coordinator(), scratch);
        if (!module) return reply;
        const parallelism = settings.parallelism ?? 1;
        const planned = await planInThread(
          { ...module, parallelism, params: settings.params, cacheDir: defaultCacheDir() },
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
        const job = await coordinator().submitFromOutside(m);
        // The errors refused it already (the coordinator's gates are the lint's); the warnings go back with it.
        const warnings = jobFindings(planned.spec, {
          settings: m.checkpoint,
          coordinatorRegionRetries: coordinator().config.maxRegionRetries,
          ...(settings.autoscale ? { autoscale: settings.autoscale } : {}),
        })
          .filter((f) => f.severity === 'warning')
          .map(({ check, message }) => ({ check, message }));
        return reply
          .code(201)
          .send({ jobId: job.id, name: job.name, moduleSha256: planned.module.sha256, state: job.state, warnings });
      } catch (err) {
        const failure = submitFailure(err);
        return sendError(reply, failure.status, failure.code, failure.message);
      } finally {
        if (scratch) await rm(scratch, { recursive: true, force: true });
      }
    },
  );
}

/** The module the request carries, ready to plan; undefined when a refusal was sent. */
async function moduleOf(
  req: FastifyRequest,
  reply: FastifyReply,
  c: Coordinator,
  scratch: string,
): Promise<Pick<PlanRequest, 'module' | 'label'> | undefined> {
  if (!req.isMultipart()) {
    const sha = (req.body as { moduleSha256?: unknown } | undefined)?.moduleSha256;
    if (typeof sha !== 'string' || !/^[0-9a-f]{64}$/.test(sha)) {
      sendError(
        reply,
        400,
        'CLINK_ERR_INVALID_ARGUMENT',
        'send the job module as a multipart upload (field "module"), or JSON { "moduleSha256": "<64 hex digits>" } naming one this coordinator holds',
      );
      return undefined;
    }
    const held = c.cachedModule(sha);
    if (!held) {
      sendError(
        reply,
        404,
        'CLINK_ERR_MODULE_MISSING',
        `this coordinator does not hold job module ${sha}: upload it (multipart, field "module")`,
      );
      return undefined;
    }
    return { module: { code: held.bytes, sourceMap: held.sourceMap }, label: `job module ${sha.slice(0, 12)}` };
  }
  const file = await req.file();
  if (!file || file.fieldname !== 'module') {
    sendError(
      reply,
      400,
      'CLINK_ERR_INVALID_ARGUMENT',
      'the upload has no file field "module": send the job file as module=@job.ts',
    );
    return undefined;
  }
  const name = basename(file.filename || 'job.ts');
  const bytes = await file.toBuffer().catch((err: Error & { code?: string }) => {
    if (err.code !== 'FST_REQ_FILE_TOO_LARGE') throw err;
    sendError(
      reply,
      413,
      'CLINK_ERR_INVALID_ARGUMENT',
      `the job module ${name} is larger than ${MAX_UPLOAD_BYTES} bytes`,
    );
    return undefined;
  });
  if (!bytes) return undefined;
  // A bundle clink built names its SDK in its first line; anything else is a job file to compile.
  if (bundleSdk(bytes))
    return { module: { code: new Uint8Array(bytes), sourceMap: new Uint8Array(0) }, label: `job module ${name}` };
  const ext = extname(name);
  if (!SOURCE_EXTENSIONS.has(ext)) {
    sendError(
      reply,
      400,
      'CLINK_ERR_INVALID_ARGUMENT',
      `the job module ${name} is not a job file: upload a .ts or .js file (one file; it may import only clink)`,
    );
    return undefined;
  }
  // Saved under its own name (a fresh directory, the name without its path) so compile errors point at it.
  const path = join(scratch, name);
  await writeFile(path, bytes);
  return { module: { path }, label: `job module ${name}` };
}
