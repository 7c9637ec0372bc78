/** The thread of bench/local-thread.ts: loads its job once, then runs it locally for each request. */
import { parentPort, workerData } from 'node:worker_threads';
import { loadJobModule } from '../src/loader/index.js';
import { localRun } from './nexmark.js';

const { job } = await loadJobModule((workerData as { file: string }).file);
parentPort!.on('message', (m: { events: number; parallelism: number } | 'close') => {
  if (m === 'close') {
    parentPort!.close();
    return;
  }
  localRun(job, m.events, m.parallelism).then(
    (r) => parentPort!.postMessage(r),
    (err: Error) => parentPort!.postMessage({ error: err.stack ?? err.message }),
  );
});
