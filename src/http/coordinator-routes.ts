/**
 * A coordinator's routes: jobs (list, detail, checkpoints, cancel, savepoint, rescale) and workers. A standby
 * (no coordinator until it is elected) answers them 503 naming where the leader is.
 */
import type { FastifyInstance } from 'fastify';
import type { Coordinator } from '../coordinator/index.js';
import { sendError } from './errors.js';
import { sqlRoutes } from './sql-route.js';
import { submitRoute } from './submit-route.js';
import {
  ActionReply,
  CheckpointList,
  ErrorReply,
  JobDetail,
  JobIdParams,
  JobList,
  RescaleBody,
  RescaleReply,
  SavepointBody,
  SavepointReply,
  WorkerList,
} from './schemas.js';

type Health = () => { ok: boolean; status: string } & Record<string, unknown>;

export function coordinatorRoutes(
  api: FastifyInstance,
  current: () => Coordinator | undefined,
  health: Health | undefined,
  planTimeoutMs?: number,
  sqlCatalogDir?: string,
): void {
  const errors = { 400: ErrorReply, 401: ErrorReply, 404: ErrorReply, 503: ErrorReply };
  api.addHook('preHandler', async (req, reply) => {
    if (!req.url.startsWith('/api/v1/jobs') && !req.url.startsWith('/api/v1/workers')) return;
    if (current()) return;
    const { ok: _, status, ...detail } = health?.() ?? { ok: false, status: 'standby' };
    return sendError(reply, 503, 'CLINK_ERR_UNAVAILABLE', `this coordinator is a ${status}: ask the leader`, {
      status,
      ...detail,
    });
  });
  const coordinator = (): Coordinator => current()!;
  const noJob = (id: string): string =>
    `no job ${id}: it never ran here, or it has left the history (the newest 128 ended jobs are kept)`;
  type ById = { Params: { id: string } };

  submitRoute(api, coordinator, planTimeoutMs);
  sqlRoutes(api, coordinator, sqlCatalogDir, planTimeoutMs);
  api.get(
    '/api/v1/jobs',
    { schema: { summary: 'running jobs, then ended ones newest first', response: { 200: JobList, ...errors } } },
    async () => ({ jobs: coordinator().listJobs() }),
  );
  api.get<ById>(
    '/api/v1/jobs/:id',
    {
      schema: {
        summary: 'a job: state, graph with per-task metrics, placement, restarts, guarantee, checkpoint settings',
        params: JobIdParams,
        response: { 200: JobDetail, ...errors },
      },
    },
    async (req, reply) => {
      const job = coordinator().job(req.params.id);
      return job ?? sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', noJob(req.params.id));
    },
  );
  api.get<ById>(
    '/api/v1/jobs/:id/checkpoints',
    {
      schema: {
        summary: "a job's completed checkpoints, oldest first (the newest 100)",
        params: JobIdParams,
        response: { 200: CheckpointList, ...errors },
      },
    },
    async (req, reply) => {
      const checkpoints = coordinator().checkpointsOf(req.params.id);
      return checkpoints ? { checkpoints } : sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', noJob(req.params.id));
    },
  );
  api.post<ById>(
    '/api/v1/jobs/:id/cancel',
    {
      schema: {
        summary: 'cancel a running job (it ends CANCELED once its subtasks have stopped)',
        params: JobIdParams,
        response: { 202: ActionReply, ...errors },
      },
    },
    async (req, reply) => {
      const r = coordinator().cancel(req.params.id, 'cancelled over HTTP');
      return r.ok ? reply.code(202).send(r) : sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', r.message);
    },
  );
  api.post<ById & { Body: { dir: string; cancel?: boolean } }>(
    '/api/v1/jobs/:id/savepoint',
    {
      schema: {
        summary:
          'take a savepoint into dir (and cancel the job after it, with cancel: true); answers once it is durable',
        params: JobIdParams,
        body: SavepointBody,
        response: { 200: SavepointReply, 409: ErrorReply, ...errors },
      },
    },
    async (req, reply) => {
      const c = coordinator();
      if (!c.job(req.params.id)) return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', noJob(req.params.id));
      const r = await c.savepoint(req.params.id, req.body.dir, req.body.cancel ?? false);
      return r.ok ? r : sendError(reply, 409, 'CLINK_ERR_STATE', r.message);
    },
  );
  api.post<
    ById & { Body: { parallelism?: number; operators?: Record<string, number>; mode?: 'auto' | 'hot' | 'replan' } }
  >(
    '/api/v1/jobs/:id/rescale',
    {
      schema: {
        summary:
          'rescale a running job: in place (only the changed tasks replaced, from a checkpoint) or by drain and replan (a checkpoint, a stop, a redeploy from it); answers once it runs again',
        params: JobIdParams,
        body: RescaleBody,
        response: { 200: RescaleReply, 409: ErrorReply, ...errors },
      },
    },
    async (req, reply) => {
      const c = coordinator();
      if (!c.job(req.params.id)) return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', noJob(req.params.id));
      const r = await c.rescale(
        req.params.id,
        { parallelism: req.body.parallelism ?? 0, operators: req.body.operators ?? {}, mode: req.body.mode ?? 'auto' },
        'the HTTP API',
      );
      if (r.ok) return r;
      const status =
        r.code === 'CLINK_ERR_NOT_FOUND'
          ? 404
          : r.code === 'CLINK_ERR_STATE' || r.code === 'CLINK_ERR_NOT_ENOUGH_SLOTS'
            ? 409
            : 400;
      return sendError(reply, status, r.code, r.message);
    },
  );
  api.get(
    '/api/v1/workers',
    {
      schema: {
        summary:
          'live workers (slots, address, what runs on each, how its last session ended) and the sessions that ended',
        response: { 200: WorkerList, ...errors },
      },
    },
    async () => {
      const c = coordinator();
      const workers = c.workers();
      return {
        workers,
        slotsTotal: workers.reduce((n, w) => n + w.slotsTotal, 0),
        slotsFree: workers.reduce((n, w) => n + w.slotsFree, 0),
        departed: c.departedWorkers(),
      };
    },
  );
}
