import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.agent-runner/', 'examples/**/repo/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      // The core decides; it talks to the outside world only through ports.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['dockerode', 'openai', 'execa', 'tar-fs', 'node:child_process'],
              message: 'src/core imports ports, not adapters.',
            },
            {
              group: ['../sandbox/*', '../meta/openai-*', '../workspace/git-*', '../worker/codex-*'],
              message: 'src/core imports ports, not adapters.',
            },
          ],
        },
      ],
    },
  },
  { files: ['**/*.js', 'bin/*'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
);
