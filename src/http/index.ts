/**
 * The HTTP surface of a node (fastify): Prometheus metrics, health, config and connectors on every node;
 * a coordinator's jobs, checkpoints and workers (read, cancel, savepoint); a worker's own session.
 * Every route has a JSON schema, and the OpenAPI document built from them is served at
 * /api/v1/openapi.json. Errors are `{ code, message }` with the codes of docs/errors.md.
 * `buildHttpApp` returns the app; the caller listens, so tests can use `inject()`.
 *
 * @example
 * const app = buildHttpApp({ role: 'coordinator', metrics, config, coordinator });
 * await app.listen({ port: 8081, host: '127.0.0.1' });
 */
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { Coordinator } from '../coordinator/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { WorkerStatus } from '../worker/index.js';
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import { tokensEqual } from '../util/index.js';
import { sendError } from './errors.js';
import { coordinatorRoutes } from './coordinator-routes.js';
import { consoleRoutes, isApiPath } from './console.js';
import { ConfigReply, ConnectorList, ErrorReply, Health, WorkerSelf } from './schemas.js';

export interface HttpDeps {
  role: 'coordinator' | 'worker';
  metrics: ClinkMetrics;
  /** The settings in effect, served at /api/v1/config. */
  config: Readonly<Record<string, unknown>>;
  /** The coordinator, or a getter for it: a standby has none until it is elected (its job routes answer 503). */
  coordinator?: Coordinator | (() => Coordinator | undefined);
  /** A worker node's view of its own session (GET /api/v1/worker). */
  worker?: () => WorkerStatus | undefined;
  /** Whether the node can serve (a worker without a coordinator session cannot), and any detail (a standby's leader). @default always ok */
  health?: () => { ok: boolean; status: string } & Record<string, unknown>;
  /** The cluster's token (CLINK_AUTH_TOKEN): every request but a CORS preflight must carry `Authorization: Bearer <token>`. */
  authToken?: string;
  /** How long an uploaded module's build function may run (POST /api/v1/jobs). @default PLAN_TIMEOUT_MS (30 s) */
  planTimeoutMs?: number;
  /** Where the coordinator's SQL session keeps its permanent tables and views (--sql-catalog-dir). @default the session only */
  sqlCatalogDir?: string;
  /** A coordinator's console: another build to serve at / (--http-static-dir). @default the console built into dist/console */
  staticDir?: string;
}

export { sendError } from './errors.js';

export function buildHttpApp(deps: HttpDeps): FastifyInstance {
  const app = Fastify({ logger: false, ajv: { customOptions: { coerceTypes: false } } });
  const token = deps.authToken;
  if (token) {
    // Before any handler, the 404 one included: without the token nothing about the node is told.
    app.addHook('onRequest', async (req, reply) => {
      if (req.method === 'OPTIONS') return;
      // The console's own files hold no data (its API calls carry the token): a browser can load it and ask.
      if (deps.role === 'coordinator' && req.method === 'GET' && !isApiPath(new URL(req.url, 'http://x').pathname))
        return;
      const header = req.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (given && tokensEqual(given, token)) return;
      void reply.header('www-authenticate', 'Bearer realm="clink"');
      return sendError(
        reply,
        401,
        'CLINK_ERR_UNAUTHORIZED',
        `${given ? 'wrong' : 'missing'} bearer token: send Authorization: Bearer <CLINK_AUTH_TOKEN>`,
      );
    });
  }
  void app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: `clink ${deps.role} API`,
        version: '1',
        description: 'The HTTP API of a clink node. Errors are { code, message } (docs/errors.md).',
      },
      ...(token
        ? {
            components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
            security: [{ bearer: [] }],
          }
        : {}),
    },
  });
  // A malformed request (a body or parameter its schema refuses) is a 400 naming what is wrong.
  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown; code?: string }, _req, reply) => {
    if (err.validation) return sendError(reply, 400, 'CLINK_ERR_INVALID_ARGUMENT', err.message);
    if (err.statusCode && err.statusCode < 500)
      return sendError(reply, err.statusCode, 'CLINK_ERR_INVALID_ARGUMENT', err.message);
    return sendError(reply, 500, 'CLINK_ERR_INTERNAL', `internal error: ${err.message}`);
  });
  void app.register(async (api) => {
    const error = { 400: ErrorReply, 401: ErrorReply, 404: ErrorReply, 503: ErrorReply };
    api.get(
      '/metrics',
      {
        schema: {
          summary: 'Prometheus metrics (text exposition format)',
          produces: ['text/plain'],
          response: { 200: { type: 'string' } },
        },
      },
      async (_req, reply) => {
        void reply.header('content-type', deps.metrics.registry.contentType);
        return deps.metrics.exposition();
      },
    );
    api.get(
      '/api/v1/health',
      {
        schema: { summary: 'whether the node can serve (503 when it cannot)', response: { 200: Health, 503: Health } },
      },
      async (_req, reply) => {
        const { ok, status, ...detail } = deps.health?.() ?? { ok: true, status: 'ok' };
        return reply.code(ok ? 200 : 503).send({ status, role: deps.role, ...detail });
      },
    );
    api.get(
      '/api/v1/config',
      { schema: { summary: 'the settings in effect', response: { 200: ConfigReply } } },
      async () => ({ role: deps.role, ...deps.config }),
    );
    api.get(
      '/api/v1/connectors',
      {
        schema: {
          summary: 'what each built-in connector promises (the capability registry)',
          response: { 200: ConnectorList },
        },
      },
      async () => ({ connectors: BUILTIN_CAPABILITIES }),
    );
    api.get('/api/v1/openapi.json', { schema: { summary: 'this document', hide: true } }, async () => app.swagger());
    if (deps.worker) {
      const worker = deps.worker;
      api.get(
        '/api/v1/worker',
        {
          schema: {
            summary: "this worker's session with the coordinator and its last error",
            response: { 200: WorkerSelf, ...error },
          },
        },
        async (_req, reply) => {
          const status = worker();
          return status
            ? status
            : sendError(reply, 503, 'CLINK_ERR_UNAVAILABLE', 'the worker is starting: try again shortly');
        },
      );
    }
    if (deps.coordinator) {
      const given = deps.coordinator;
      coordinatorRoutes(
        api,
        typeof given === 'function' ? given : () => given,
        deps.health,
        deps.planTimeoutMs,
        deps.sqlCatalogDir,
      );
    }
  });
  // After every API route: the console's catch-all can never shadow one.
  if (deps.role === 'coordinator') void app.register(async (web) => consoleRoutes(web, deps.staticDir));
  app.setNotFoundHandler(async (req, reply) =>
    sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', `no route ${req.method} ${req.url}`),
  );
  return app;
}
