/**
 * Job modules: a job file (TypeScript or JavaScript, anywhere on disk) is bundled by esbuild into one
 * ESM file, stored under its SHA-256 in a cache directory, and loaded with dynamic import(). Its
 * `import ... from 'clink'` resolves to the SDK of the engine that runs it, so a job file needs no
 * package.json of its own.
 *
 * @example
 * const { job, sha256 } = await loadJobModule('examples/wordcount.ts');
 */
export {
  loadJobModule,
  loadJobBundle,
  prepareSubmission,
  compileJobModule,
  defaultCacheDir,
  sdkEntryPath,
  SDK_PLACEHOLDER,
  type LoadedJob,
  type CompiledJob,
} from './load.js';
export {
  SdkMismatchError,
  checkSdkCompatibility,
  bundleSdk,
  localSdk,
  localSdkManifest,
  differingFiles,
  sdkVersion,
  type SdkIdentity,
} from './gate.js';
export { typecheckJob, type TypecheckResult } from './typecheck.js';
export { clinkPackageRoot } from './input-record.js';
export { planInThread, PLAN_TIMEOUT_MS, type PlanRequest } from './plan-thread.js';
