/**
 * A thread that turns an uploaded job module into what a submit carries: it compiles a job source file
 * (or takes a built bundle), imports it and runs its build function with the submit's parallelism and
 * params. Run apart from the coordinator's event loop (plan-thread.ts), since the build function is user
 * code; what it answers is one message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { determinismFindings, refuseOnErrors } from '../lint/index.js';
import type { JobGraphSpec } from '../plan/index.js';
import { buildJob } from '../sdk/index.js';
import { bundleSdk, localSdk } from './gate.js';
import { compileJobModule, loadJobBundle } from './load.js';
import type { PlanProgress, PlanReply, PlanRequest } from './plan-thread.js';

const request = workerData as PlanRequest;

async function plan(): Promise<PlanReply> {
  const compiled =
    'path' in request.module
      ? await compileJobModule(request.module.path, { cacheDir: request.cacheDir })
      : (() => {
          const code = request.module.code;
          return { code, sourceMap: request.module.sourceMap, sha256: '', sdk: bundleSdk(code) ?? localSdk() };
        })();
  // From here on the module's own code runs (its top level, then the build function): the clock the
  // caller bounds it by starts now, so a slow thread start or compile on a busy host is not counted.
  parentPort!.postMessage({ phase: 'user-code' } satisfies PlanProgress);
  const { job, sha256 } = await loadJobBundle(compiled.code, {
    cacheDir: request.cacheDir,
    sourceMap: compiled.sourceMap,
    label: request.label,
  });
  const build = (): JobGraphSpec =>
    buildJob(job, {
      parallelism: request.parallelism,
      params: request.params,
      ...(request.parallelismOf ? { parallelismOf: request.parallelismOf } : {}),
    }).spec;
  const spec = build();
  // Every worker builds it again: a build that gives another graph the second time is refused here.
  refuseOnErrors(determinismFindings(spec, build));
  return { ok: true, module: { ...compiled, sha256 }, spec };
}

plan().then(
  (reply) => parentPort!.postMessage(reply),
  (err: unknown) => {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({
      ok: false,
      code: typeof e.code === 'string' && e.code.startsWith('CLINK_ERR_') ? e.code : 'CLINK_ERR_JOB_LOAD',
      message: e.message,
    } satisfies PlanReply);
  },
);
