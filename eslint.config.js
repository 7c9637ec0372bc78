// Lint: the type checker runs separately (npm run lint). These rules catch what types do not:
// promises nobody awaits, import cycles, and reaching into another subsystem past its index.js.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

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
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bin/**', 'scripts/**', 'eslint.config.js'] },
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
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'before', 'after'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      'import-x/no-cycle': 'error',
    },
  },
  { files: ['src/*/*.ts'], rules: boundary('\\.\\./') },
  { files: ['src/*/*/*.ts'], rules: boundary('\\.\\./\\.\\./') },
);
