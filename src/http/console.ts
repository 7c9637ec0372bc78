/**
 * The web console, served at / beside the API: the console built into dist/console, or the build that
 * --http-static-dir names. Files resolve under the root with content types by extension; a path without
 * an extension that names no file gets index.html (the console's deep links); a missing file with an
 * extension is a 404; anything resolving outside the root, through `..` or a symbolic link, is refused.
 * Registered after every API route and never answering under /api/ or /metrics, it cannot shadow them.
 */
import { realpath, stat } from 'node:fs/promises';
import { extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';
import { EnvironmentError } from '../errors.js';
import { sendError } from './errors.js';

/** Where `npm run build` puts the console. */
export const BUILT_CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/** Paths the console never answers: the API's. */
export const isApiPath = (path: string): boolean =>
  path === '/metrics' || path.startsWith('/metrics/') || path === '/api' || path.startsWith('/api/');

/** Serve the console from `dir`; without one, the built console if it exists, else a signpost to the API. */
export async function consoleRoutes(app: FastifyInstance, dir: string | undefined): Promise<void> {
  const given = dir !== undefined;
  const root = await realpath(resolve(dir ?? BUILT_CONSOLE_DIR)).catch(() => undefined);
  if (!root || !(await stat(join(root, 'index.html')).catch(() => undefined))) {
    if (given)
      throw new EnvironmentError(
        `--http-static-dir ${dir}: ${root ? 'it has no index.html' : 'no such directory'}; point it at a built console`,
      );
    app.get('/', async () => ({
      message:
        'clink: the HTTP API is under /api/v1 (the document at /api/v1/openapi.json); this build has no console (npm run build makes it)',
    }));
    return;
  }
  await app.register(fastifyStatic, { root, serve: false, wildcard: false });
  app.get('/*', async (req, reply) => serve(reply, root, new URL(req.url, 'http://console').pathname));
  app.get('/', async (_req, reply) => reply.sendFile('index.html', root));
}

async function serve(reply: FastifyReply, root: string, rawPath: string): Promise<FastifyReply> {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return sendError(reply, 400, 'CLINK_ERR_INVALID_ARGUMENT', `not a path: ${rawPath}`);
  }
  if (isApiPath(path)) return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', `no route GET ${rawPath}`);
  const wanted = resolve(root, `.${path}`);
  if (wanted !== root && !wanted.startsWith(root + sep))
    return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', `${rawPath} is outside the console`);
  const real = await realpath(wanted).catch(() => undefined);
  if (real === undefined) {
    // A deep link of the console (no extension): its page is index.html. A missing asset is missing.
    if (extname(path) === '') return reply.sendFile('index.html', root);
    return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', `no file ${rawPath} in the console`);
  }
  if (real !== root && !real.startsWith(root + sep))
    return sendError(reply, 404, 'CLINK_ERR_NOT_FOUND', `${rawPath} is outside the console`);
  const s = await stat(real);
  if (s.isDirectory()) return reply.sendFile('index.html', root);
  return reply.sendFile(relative(root, real), root);
}
