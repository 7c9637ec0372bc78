// The lint rule that keeps a job's record (JobState) written by its own state code only: run on a fixture
// as if it lay outside that code, it flags every write of a JobState field and nothing else.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import jobStateWriters from '../../eslint-rules/job-state-writers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = 'test/fixtures/job-state-writes.ts';

test('every write of a JobState field outside the owners is flagged, with the field named; reads and subtask writes are not', async () => {
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: [FIXTURE],
        languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: root } },
        plugins: { clink: { rules: { 'job-state-writers': jobStateWriters } } },
        rules: { 'clink/job-state-writers': ['error', { owners: ['src/coordinator/job-master.ts'] }] },
      },
    ],
  });
  const [result] = await eslint.lintFiles([FIXTURE]);
  const flagged = readFileSync(`${root}/${FIXTURE}`, 'utf8')
    .split('\n')
    .flatMap((line, i) => (line.includes('// flagged') ? [i + 1] : []));
  assert.ok(flagged.length >= 6);
  assert.deepEqual(
    result!.messages.map((m) => m.line),
    flagged,
    result!.messages.map((m) => `${m.line}: ${m.message}`).join('\n'),
  );
  assert.match(result!.messages[0]!.message, /^JobState\.state is written here, outside the job's own state code/);
});
