import type { BuildOptions } from 'esbuild';

export declare const CLI_BUNDLE_OPTIONS: BuildOptions;
