/**
 * Plan an uploaded job module off the caller's event loop: a worker thread (plan-entry.ts) compiles it
 * (a job source file) or takes it as built (a bundle), runs its build function and answers with the
 * bundle and its JobGraphSpec. Bounded in time and heap: a build function that never returns or
 * allocates without end costs a terminated thread and a clear refusal, never the coordinator.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClinkError, type ErrorCode } from '../errors.js';
import type { JobGraphSpec } from '../plan/index.js';
import { startThread } from '../util/index.js';
import type { CompiledJob } from './load.js';

const ENTRY = new URL(`./plan-entry${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export interface PlanRequest {
  /** A job source file to compile, or a built bundle. */
  module: { path: string } | { code: Uint8Array; sourceMap: Uint8Array };
  parallelism: number;
  params: Record<string, string>;
  /** Operators' parallelism by id, over what the build function gives them (a rescale's targets). */
  parallelismOf?: Record<string, number>;
  cacheDir: string;
  /** How errors name the module (`job module upload.ts`). */
  label: string;
}

export type PlanReply =
  { ok: true; module: CompiledJob; spec: JobGraphSpec } | { ok: false; code: string; message: string };
/** Sent by the thread when the module's own code is about to run. */
export interface PlanProgress {
  phase: 'user-code';
}

/** How long the module's own code (its top level and build function) may run, and the heap its thread may use. */
export const PLAN_TIMEOUT_MS = 30_000;
export const PLAN_HEAP_MB = 512;
/** How long starting the thread and compiling the module may take before its code runs. */
const PLAN_COMPILE_TIMEOUT_MS = 120_000;

export function planInThread(
  request: PlanRequest,
  o: { timeoutMs?: number; heapMb?: number } = {},
): Promise<{ module: CompiledJob; spec: JobGraphSpec }> {
  const timeoutMs = o.timeoutMs ?? PLAN_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const thread = startThread(ENTRY, {
      workerData: request,
      resourceLimits: { maxOldGenerationSizeMb: o.heapMb ?? PLAN_HEAP_MB },
      stdout: true,
      stderr: true,
    });
    // What the build function prints is not the coordinator's output: read and dropped.
    thread.stdout.resume();
    thread.stderr.resume();
    let settled = false;
    const settle = (f: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void thread.terminate();
      f();
    };
    let timer = setTimeout(
      () =>
        settle(() =>
          reject(
            new ClinkError(
              'CLINK_ERR_JOB_LOAD',
              `${request.label}: compiling it did not finish within ${PLAN_COMPILE_TIMEOUT_MS} ms`,
            ),
          ),
        ),
      PLAN_COMPILE_TIMEOUT_MS,
    );
    thread.on('message', (reply: PlanReply | PlanProgress) => {
      if ('phase' in reply) {
        clearTimeout(timer);
        timer = setTimeout(
          () =>
            settle(() =>
              reject(
                new ClinkError(
                  'CLINK_ERR_JOB_DEFINITION',
                  `${request.label}: its build function did not return within ${timeoutMs} ms (a loop that never ends?)`,
                ),
              ),
            ),
          timeoutMs,
        );
        return;
      }
      settle(() =>
        reply.ok
          ? resolve({
              module: {
                ...reply.module,
                code: new Uint8Array(reply.module.code),
                sourceMap: new Uint8Array(reply.module.sourceMap),
              },
              spec: reply.spec,
            })
          : reject(new ClinkError(reply.code as ErrorCode, reply.message)),
      );
    });
    thread.once('error', (err: Error & { code?: string }) => {
      const heap = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      settle(() =>
        reject(
          new ClinkError(
            'CLINK_ERR_JOB_DEFINITION',
            heap
              ? `${request.label}: its build function ran out of memory (limit ${o.heapMb ?? PLAN_HEAP_MB} MB)`
              : `${request.label}: ${err.message}`,
          ),
        ),
      );
    });
    thread.once('exit', (code) =>
      settle(() =>
        reject(
          new ClinkError('CLINK_ERR_JOB_LOAD', `${request.label}: planning it ended without an answer (exit ${code})`),
        ),
      ),
    );
  });
}
