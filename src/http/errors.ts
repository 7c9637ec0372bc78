/** The one shape of an HTTP error: `{ code, message }`, the code one of docs/errors.md's. */
import type { FastifyReply } from 'fastify';
import type { ErrorCode } from '../errors.js';

export function sendError(
  reply: FastifyReply,
  status: number,
  code: ErrorCode,
  message: string,
  detail: Record<string, unknown> = {},
): FastifyReply {
  return reply.code(status).send({ code, message, ...detail });
}
