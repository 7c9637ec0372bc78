/**
 * The HTTP API's SQL session, in a thread of its own (sql-thread-entry.ts): the SQL planner loads there
 * (building its parser takes seconds of CPU) and plans there, never on the coordinator's event loop,
 * which reads frames and answers heartbeats. The session's catalog lives with the thread (and on disk
 * with --sql-catalog-dir); requests are answered in order. A thread that fails or overruns a request is
 * ended and started again for the next one.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { ClinkError, type ErrorCode } from '../errors.js';
import { startThread } from '../util/index.js';
import type { SqlResult } from '../sql/index.js';

const ENTRY = new URL(`./sql-thread-entry${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** How long one SQL request may take in the thread (loading the planner, then planning). */
export const SQL_REQUEST_TIMEOUT_MS = 60_000;
const SQL_THREAD_HEAP_MB = 512;

export type SqlThreadRequest =
  | {
      /** SET lasts for one request: the session is the coordinator's, shared by every client. */
      op: 'execute';
      text: string;
      mode: 'explain' | 'compile';
      parallelism: number;
      params: Record<string, string>;
      name?: string;
    }
  | { op: 'catalog' };

/** A statement the planner refused: its words, where it is, and the line with a caret. */
export interface SqlRefusal {
  message: string;
  detail: string;
  position: number;
  excerpt: string;
}

export type SqlThreadReply =
  | {
      id: number;
      ok: true;
      results?: SqlResult[];
      objects?: { name: string; kind: string; temporary: boolean; sql: string }[];
    }
  | { id: number; ok: false; refusal?: SqlRefusal; code: string; message: string };

/** A statement refused by the planner (400 with position and excerpt). */
export class SqlStatementError extends ClinkError {
  constructor(readonly refusal: SqlRefusal) {
    super('CLINK_ERR_PLAN', refusal.message);
  }
}

export class SqlThread {
  private thread: Worker | undefined;
  private seq = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (r: SqlThreadReply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();

  constructor(private readonly o: { catalogDir: string | undefined; connectors: string[]; timeoutMs?: number }) {}

  /** Run `request` in the thread; a refusal is thrown (SqlStatementError, or a ClinkError with its code). */
  async request(request: SqlThreadRequest): Promise<Extract<SqlThreadReply, { ok: true }>> {
    const reply = await new Promise<SqlThreadReply>((resolve, reject) => {
      const id = ++this.seq;
      const timeoutMs = this.o.timeoutMs ?? SQL_REQUEST_TIMEOUT_MS;
      const timer = setTimeout(() => {
        this.restart(new ClinkError('CLINK_ERR_PLAN', `the SQL request did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
      this.started().postMessage({ id, ...request });
    });
    if (reply.ok) return reply;
    if (reply.refusal) throw new SqlStatementError(reply.refusal);
    throw new ClinkError(reply.code as ErrorCode, reply.message);
  }

  private started(): Worker {
    if (this.thread) return this.thread;
    const thread = startThread(ENTRY, {
      workerData: { catalogDir: this.o.catalogDir, connectors: this.o.connectors },
      resourceLimits: { maxOldGenerationSizeMb: SQL_THREAD_HEAP_MB },
    });
    thread.unref();
    thread.on('message', (r: SqlThreadReply) => {
      const w = this.waiting.get(r.id);
      if (!w) return;
      this.waiting.delete(r.id);
      clearTimeout(w.timer);
      w.resolve(r);
    });
    thread.once('error', (err: Error) =>
      this.restart(new ClinkError('CLINK_ERR_INTERNAL', `the SQL session failed: ${err.message}`)),
    );
    thread.once('exit', (code) => {
      if (this.thread === thread)
        this.restart(new ClinkError('CLINK_ERR_INTERNAL', `the SQL session ended (exit ${code})`));
    });
    return (this.thread = thread);
  }

  /** End the thread, failing what waits on it; the next request starts another. */
  private restart(reason: Error): void {
    const thread = this.thread;
    this.thread = undefined;
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      this.waiting.delete(id);
      w.reject(reason);
    }
    void thread?.terminate();
  }

  async close(): Promise<void> {
    const thread = this.thread;
    this.restart(new ClinkError('CLINK_ERR_CANCELLED', 'the HTTP API is closing'));
    await thread?.terminate();
  }
}
