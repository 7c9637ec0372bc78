import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineJob, file, startJob, type JobEnvironment } from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-file-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file connector', () => {
  test('reads lines, and JSON lines by extension, skipping blank lines and CRLF endings', async () => {
    await writeFile(join(dir, 'a.txt'), 'one\r\ntwo\n\nthree');
    await writeFile(join(dir, 'b.jsonl'), '{"n":1}\n{"n":2}\n');
    const lines = await collect<string>((env) => env.fromSource('file', { path: join(dir, 'a.txt') }).collect());
    assert.deepEqual(lines, ['one', 'two', 'three']);
    const json = await collect<{ n: number }>((env) =>
      env.fromSource('file', { path: join(dir, 'b.jsonl') }).collect(),
    );
    assert.deepEqual(json, [{ n: 1 }, { n: 2 }]);
  });

  test('a directory is split file by file across subtasks, hidden files skipped', async () => {
    const d = join(dir, 'many');
    await mkdir(d);
    const expected: string[] = [];
    for (let f = 0; f < 5; f++) {
      const lines = Array.from({ length: 20_000 }, (_, i) => `f${f}-${i}`);
      expected.push(...lines);
      await writeFile(join(d, `part${f}.txt`), lines.join('\n') + '\n');
    }
    await writeFile(join(d, '.hidden'), 'nope\n');
    const got = await collect<string>((env) => env.fromSource('file', { path: d }).collect(), { parallelism: 3 });
    assert.deepEqual(sortBy(got), sortBy(expected));
  });

  test('a line that is not JSON fails with the file and line number', async () => {
    await writeFile(join(dir, 'bad.jsonl'), '{"ok":1}\n{oops\n');
    await assert.rejects(
      collect((env) => env.fromSource('file', { path: join(dir, 'bad.jsonl') }).collect()),
      /bad\.jsonl:2: not valid JSON/,
    );
  });

  test('a missing path is refused naming it', async () => {
    await assert.rejects(
      collect((env) => env.fromSource('file', { path: join(dir, 'nope') }).collect()),
      /file source: cannot read '.*nope'/,
    );
  });

  test('the sink writes part-<subtask>-<n>.jsonl files, one JSON record per line', async () => {
    const out = join(dir, 'out');
    await collect(
      (env) =>
        env
          .fromSequence(1, 1_000)
          .map((i) => ({ i }))
          .sinkTo(file, { path: out }),
      { parallelism: 2 },
    );
    const names = (await readdir(out)).sort();
    assert.deepEqual(names, ['part-0-0.jsonl', 'part-1-0.jsonl']);
    const rows = (await Promise.all(names.map((n) => readFile(join(out, n), 'utf8')))).flatMap((t) =>
      t
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { i: number }),
    );
    assert.deepEqual(
      rows.map((r) => r.i).sort((a, b) => a - b),
      Array.from({ length: 1_000 }, (_, i) => i + 1),
    );
  });

  test('parts roll at the first batch boundary past rollBytes, and a second run does not overwrite the first', async () => {
    const out = join(dir, 'roll');
    const job = (env: JobEnvironment): void => {
      env.fromSequence(1, 100).sinkTo('file', { path: out, rollBytes: 100 });
    };
    await collect(job, { batchSize: 10 });
    const first = (await readdir(out)).sort();
    assert.ok(first.length >= 2, `rolled into ${first.length} parts`);
    await collect(job, { batchSize: 10 });
    const both = await readdir(out);
    assert.equal(both.length, first.length * 2);
    const total = (await Promise.all(both.map((n) => readFile(join(out, n), 'utf8'))))
      .join('')
      .trim()
      .split('\n').length;
    assert.equal(total, 200);
  });

  test('a file being written is hidden until it is finished', async () => {
    const out = join(dir, 'hidden');
    const exec = startJob(
      defineJob({ name: 'slow-writer', version: '1' }, (env) => {
        env.fromSource('datagen', { count: 400, rowsPerSecond: 2_000 }).sinkTo('file', { path: out });
      }),
    );
    let sawInProgress = false;
    while (!sawInProgress) {
      await sleep(10);
      const names = await readdir(out).catch(() => [] as string[]);
      const visible = names.filter((n) => !n.startsWith('.'));
      assert.deepEqual(visible, [], 'no visible part file before the job finishes');
      sawInProgress = names.some((n) => n.endsWith('.inprogress'));
    }
    await exec.done;
    const names = await readdir(out);
    assert.deepEqual(names, ['part-0-0.jsonl']);
    assert.equal((await readFile(join(out, names[0]!), 'utf8')).trim().split('\n').length, 400);
  });

  test('a failed job publishes no unfinished part, and leaves none behind (a full disk left hidden parts before)', async () => {
    const out = join(dir, 'failed');
    await assert.rejects(
      collect(
        (env) => {
          env
            .fromSequence(1, 5_000)
            .map((i) => {
              if (i === 4_000) throw new Error('stop');
              return i;
            })
            .sinkTo('file', { path: out });
        },
        { batchSize: 500 },
      ),
      /stop/,
    );
    assert.deepEqual(await readdir(out), []);
  });
});
