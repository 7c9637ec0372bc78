/** Job modules the command-line tests run, each a file written into the test's directory. */
export const CLI_JOBS: Record<string, string> = {
  'ok.ts': `
    import { defineJob } from 'clink';
    interface W { word: string }
    export default defineJob({ name: 'cli-ok', version: '1' }, (env) => {
      const n = Number(env.params.n ?? 3);
      env.fromSequence(1, n).map((i): W => ({ word: 'w' + (i % 2) }))
        .keyBy((w) => w.word).count().collect('counts');
      env.fromElements(['printed line']).print();
    });`,
  'syntax.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'x', version: '1' }, (env) => {\n  env.fromElements([1).print();\n});\n`,
  'nodefault.ts': `import { defineJob } from 'clink';\nexport const job = defineJob({ name: 'x', version: '1' }, (env) => env.fromElements([1]).print());\n`,
  'notajob.js': `export default { name: 'looks like a job' };\n`,
  'throws.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'thrower', version: '1' }, () => { throw new Error('missing --param topic'); });\n`,
  'fails.ts': `
    import { defineJob } from 'clink';
    function checkAmount(x: number): number { if (x === 7) throw new TypeError('amount 7 is cursed'); return x; }
    export default defineJob({ name: 'fails', version: '1' }, (env) => {
      env.fromSequence(1, 10).map(checkAmount).name('check amount').print();
    });`,
  'flaky.ts': `
    import { existsSync, writeFileSync } from 'node:fs';
    import { defineJob } from 'clink';
    export default defineJob({ name: 'flaky', version: '1' }, (env) => {
      env.fromSequence(1, 50).map((x) => {
        if (x === 20 && !existsSync('failed-once')) { writeFileSync('failed-once', ''); throw new Error('record 20 fails once'); }
        return x;
      }).collect('xs');
    });`,
  'restart-collect.ts': `
    import { existsSync, readdirSync, writeFileSync } from 'node:fs';
    import { defineJob } from 'clink';
    const checkpointed = () => { try { return readdirSync('ckr/_jobs').some((j) => readdirSync('ckr/_jobs/' + j).some((n) => n.startsWith('COMPLETED-'))); } catch { return false; } };
    export default defineJob({ name: 'restart-collect', version: '1' }, (env) => {
      env.fromSource<{ id: number }>('datagen', { count: 2000, rowsPerSecond: 1000 }).map((r) => {
        if (!existsSync('failed-after-checkpoint') && checkpointed()) { writeFileSync('failed-after-checkpoint', ''); throw new Error('fails once, after a checkpoint'); }
        return r.id;
      }).collect('ids');
    });`,
  'slow.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'slowish', version: '1' }, (env) => env.fromSource('datagen', { count: 300, rowsPerSecond: 500 }).collect());\n`,
  'plain.js': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'plain-js', version: '1' }, (env) => env.fromElements(['js ok']).print());\n`,
};

/** The first-hour tests' jobs (without and against a cluster). */
export const FIRST_HOUR_JOBS: Record<string, string> = {
  'rate.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'rate', version: '1' }, (env) => {
      env.fromSource<{ n: number }>('datagen', { count: 5, rowsPerSecond: Number(env.params.rate ?? 100), seed: 1, fields: { n: { kind: 'sequence' } } })
        .collect('rows');
    });`,
  'windows.ts': `
    import { defineJob, Windows } from 'clink';
    export default defineJob({ name: 'windows', version: '1' }, (env) => {
      const base = Date.UTC(2026, 0, 1);
      env.fromSequence(0, 49).setParallelism(1)
        .map((i) => ({ user: i % 25, ts: base + (i % 2) * 60_000 }))
        .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 0 })
        .keyBy((r) => r.user).window(Windows.tumbling(60_000)).count().collect('per minute');
    });`,
  // Marks the first record it sees, then runs until stopped.
  'forever.ts': `
    import { writeFileSync } from 'node:fs';
    import { defineJob } from 'clink';
    export default defineJob({ name: 'forever', version: '1' }, (env) => {
      const marker = env.params.marker!;
      env.fromSource<{ n: number }>('datagen', { rowsPerSecond: 200, seed: 1, fields: { n: { kind: 'sequence' } } })
        .map((r) => { if (r.n === 0) writeFileSync(marker, 'running'); return r; }).collect('rows');
    });`,
  'mistyped.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'mistyped', version: '1' }, (env) => {
      env.fromSequence(1, 3).map((x) => x.toUpperCase()).collect('xs');
    });`,
  'printer.ts': `
    import { defineJob } from 'clink';
    export default defineJob({ name: 'printer', version: '1' }, (env) => {
      env.fromSequence(1, 2000).map((i) => 'printed-' + i + '-' + 'x'.repeat(40)).print();
    });`,
};
