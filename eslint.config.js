// Lint: the type checker runs separately (npm run lint). These rules catch what types do not:
// promises nobody awaits, import cycles, reaching into another subsystem past its index.js, and a job's
// record written outside its own state code (eslint-rules/job-state-writers.js).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import jobStateWriters from './eslint-rules/job-state-writers.js';

const boundary = (up) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        {
          regex: `^${up}(?!errors\\.js$)(?!.*/index\\.js$).*`,
          message: 'Import another subsystem through its index.js (its public door).',
        },
      ],
    },
  ],
});

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'bin/**',
      'scripts/**',
      'eslint.config.js',
      'eslint-rules/**',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'before', 'after'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      'import-x/no-cycle': 'error',
    },
  },
  {
    // A job's record is written by its own state code only: its JobMaster and the state files beside it.
    files: ['src/**/*.ts'],
    plugins: { clink: { rules: { 'job-state-writers': jobStateWriters } } },
    rules: {
      'clink/job-state-writers': [
        'error',
        { owners: ['src/coordinator/job-master.ts', 'src/coordinator/job-state.ts', 'src/coordinator/job-states'] },
      ],
    },
  },
  { files: ['src/*/*.ts'], rules: boundary('\\.\\./') },
  { files: ['src/*/*/*.ts'], rules: boundary('\\.\\./\\.\\./') },
);
