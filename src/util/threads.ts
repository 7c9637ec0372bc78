/** Starting a worker thread on one of clink's own modules, built (.js) or from sources under tsx (.ts). */
import { Worker as Thread } from 'node:worker_threads';

/**
 * A thread running `entry`: built, directly; from sources (tests, run through tsx) through a bootstrap
 * that registers tsx in the thread first, since a thread does not inherit the parent's loader hooks.
 */
export function startThread(entry: URL, options: ConstructorParameters<typeof Thread>[1]): Thread {
  if (!entry.pathname.endsWith('.ts')) return new Thread(entry, options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => m.register()).then(() => import(${JSON.stringify(entry.href)}))`;
  return new Thread(bootstrap, { ...options, eval: true });
}
