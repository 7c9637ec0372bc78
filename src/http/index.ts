/**
 * The HTTP surface of a node (fastify): Prometheus metrics, health, and for a coordinator its jobs and
 * workers. `buildHttpApp` returns the app; the caller listens, so tests can use `inject()`.
 *
 * @example
 * const app = buildHttpApp({ role: 'coordinator', metrics, config, coordinator });
 * await app.listen({ port: 8081, host: '127.0.0.1' });
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Coordinator } from '../coordinator/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import { tokensEqual } from '../util/index.js';

export interface HttpDeps {
  role: 'coordinator' | 'worker';
  metrics: ClinkMetrics;
  /** The settings in effect, served at /api/v1/config. */
  config: Readonly<Record<string, unknown>>;
  /** The coordinator, or a getter for it: a standby has none until it is elected (its job routes answer 503). */
  coordinator?: Coordinator | (() => Coordinator | undefined);
  /** Whether the node can serve (a worker without a coordinator session cannot), and any detail (a standby's leader). @default always ok */
  health?: () => { ok: boolean; status: string } & Record<string, unknown>;
  /** The cluster's token (CLINK_AUTH_TOKEN): every request but a CORS preflight must carry `Authorization: Bearer <token>`. */
  authToken?: string;
}

export function buildHttpApp(deps: HttpDeps): FastifyInstance {
  const app = Fastify({ logger: false });
  const token = deps.authToken;
  if (token) {
    // Before any handler, the 404 one included: without the token nothing about the node is told.
    app.addHook('onRequest', async (req, reply) => {
      if (req.method === 'OPTIONS') return;
      const header = req.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (given && tokensEqual(given, token)) return;
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="clink"')
        .send({ error: `${given ? 'wrong' : 'missing'} bearer token: send Authorization: Bearer <CLINK_AUTH_TOKEN>`, code: 'CLINK_ERR_UNAUTHORIZED' });
    });
  }
  app.get('/metrics', async (_req, reply) => {
    void reply.header('content-type', deps.metrics.registry.contentType);
    return deps.metrics.exposition();
  });
  app.get('/api/v1/health', async (_req, reply) => {
    const { ok, status, ...detail } = deps.health?.() ?? { ok: true, status: 'ok' };
    return reply.code(ok ? 200 : 503).send({ status, role: deps.role, ...detail });
  });
  app.get('/api/v1/config', async () => ({ role: deps.role, ...deps.config }));
  app.get('/api/v1/connectors', async () => ({ connectors: BUILTIN_CAPABILITIES }));
  const given = deps.coordinator;
  if (given) {
    const current = typeof given === 'function' ? given : () => given;
    // A standby answers its job routes with where the leader is (see health).
    app.addHook('preHandler', async (req, reply) => {
      if (!req.url.startsWith('/api/v1/jobs') && !req.url.startsWith('/api/v1/workers')) return;
      if (current()) return;
      const { ok: _, status, ...detail } = deps.health?.() ?? { ok: false, status: 'standby' };
      return reply.code(503).send({ error: `this coordinator is a ${status}: ask the leader`, status, ...detail });
    });
    const coordinator = (): Coordinator => current()!;
    app.get('/api/v1/jobs', async () => ({ jobs: coordinator().listJobs() }));
    app.get<{ Params: { id: string } }>('/api/v1/jobs/:id', async (req, reply) => {
      const job = coordinator().job(req.params.id);
      if (!job) return reply.code(404).send({ error: `no job ${req.params.id}`, code: 'CLINK_ERR_NOT_FOUND' });
      return job;
    });
    app.get<{ Params: { id: string } }>('/api/v1/jobs/:id/checkpoints', async (req, reply) => {
      const checkpoints = coordinator().checkpointsOf(req.params.id);
      if (!checkpoints) return reply.code(404).send({ error: `no job ${req.params.id}`, code: 'CLINK_ERR_NOT_FOUND' });
      return { checkpoints };
    });
    app.get('/api/v1/workers', async () => {
      const workers = coordinator().workers();
      return {
        workers,
        slotsTotal: workers.reduce((n, w) => n + w.slotsTotal, 0),
        slotsFree: workers.reduce((n, w) => n + w.slotsFree, 0),
      };
    });
  }
  app.setNotFoundHandler(async (req, reply) => reply.code(404).send({ error: `no route ${req.method} ${req.url}` }));
  return app;
}
