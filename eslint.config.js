import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.test-cli-*/', 'node_modules/', '.agent-runner/', 'examples/**/repo/', 'coverage/'] },
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
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'AbortSignal',
          property: 'timeout',
          message:
            'Node 20 holds its signal weakly: combined with AbortSignal.any it can be collected and never fire. Use timeoutSignal (src/core/timeout-signal.ts).',
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          // `import { z }` makes esbuild keep zod's whole namespace (every locale: ~530 KB more in the CLI's
          // start); property accesses on a namespace import let it keep only what the code uses.
          selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier",
          message: "Import zod as a namespace: import * as z from 'zod'.",
        },
      ],
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
              group: [
                '../sandbox/*',
                '../meta/openai-*',
                '../workspace/git-*',
                '../workspace/git/*',
                '../worker/codex-*',
              ],
              message: 'src/core imports ports, not adapters.',
            },
            {
              // The core does no I/O: files, processes, the network and templates are behind ports.
              group: [
                'node:*',
                'fs',
                'fs/*',
                'path',
                'os',
                'crypto',
                'net',
                'http',
                'https',
                'child_process',
                '../patterns/worker-prompt*',
                '../notes/*',
                '../lifecycle/*',
                '../gateway/*',
              ],
              allowTypeImports: true,
              message: 'src/core does no I/O: reach the outside world through a port (src/core/ports.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    // Small enough to read as a newcomer: a longer file or function says why in a disable comment.
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': [
        'error',
        { max: 80, skipBlankLines: false, skipComments: false, IIFEs: true },
      ],
    },
  },
  {
    files: ['**/*.js', 'scripts/**/*.mjs', 'bin/*'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        Buffer: 'readonly',
      },
    },
  },
);
