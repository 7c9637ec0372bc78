/** Job modules the `clink lint` tests lint (and submit): one clean, the others each with something to find. */
export const LINT_JOBS: Record<string, string> = {
  'clean.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'clean', version: '1' }, (env) => {
      env.fromSequence(1, 100).uid('numbers').keyBy((x) => x % 3).count().uid('counts').collect('counts');
    });`,
  'keyed200.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'wide', version: '1' }, (env) => {
      env.fromSequence(1, 10).keyBy((x) => x).count().name('too wide').setParallelism(200).print().setParallelism(1);
    });`,
  'unknown.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'unknown', version: '1' }, (env) => {
      env.fromSource('kafkaa', {}).name('in').print();
    });`,
  'printed-exactly-once.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'eo', version: '1', guarantee: 'exactly-once' }, (env) => {
      env.fromSequence(1, 10).print().name('console');
    });`,
  'stateful.ts': `
    import { defineJob, Windows } from 'clink';
    export default defineJob({ name: 'stateful', version: '1' }, (env) => {
      env.fromSource<{ k: number; ts: number }>('datagen', { count: 10, fields: { k: { kind: 'int', min: 1, max: 3 }, ts: { kind: 'timestamp' } } })
        .assignTimestamps((r) => r.ts).keyBy((r) => r.k).window(Windows.tumbling(10), { allowedLatenessMs: 5 }).count().print();
    });`,
  'no-watermarks.ts': `
    import { defineJob, Windows } from 'clink';
    export default defineJob({ name: 'nowm', version: '1' }, (env) => {
      env.fromSequence(1, 10).name('numbers').keyBy((x) => x % 2).window(Windows.tumbling(5)).count().name('per 5').print();
    });`,
  'clocked.ts': `
    import { defineJob } from 'clink';
    let builds = 0;
    export default defineJob({ name: 'clocked', version: '1' }, (env) => {
      env.fromSequence(1, 10 + builds++).print();
    });`,
};
