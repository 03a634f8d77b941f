/**
 * What the tasks of one process share: the redaction point every writer goes through, the clock, the
 * replaceable pieces tests and benchmarks pass in, and the Docker side (one client and one runtime, made
 * on first use). A CLI command makes one host; a server would make one and run many tasks on it.
 */
import type Docker from 'dockerode';
import type { Config } from '../config/schema.js';
import type { Clock, HumanPort, SandboxRuntime, WorkerAdapter } from '../core/ports.js';
import type { MetaModel } from '../meta/meta-model.js';
import { configSecrets, Redaction, type Redactor } from '../notes/redact.js';
import { VERSION } from '../version.js';

/** Replaceable pieces, for tests and benchmarks; everything else is the real thing. */
export interface AppDependencies {
  docker?: Docker;
  runtime?: SandboxRuntime;
  metaModel?: MetaModel;
  worker?: WorkerAdapter;
  human?: HumanPort;
  clock?: Clock;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    }),
};

/** The engine side, made once per host. */
export interface HostDocker {
  docker: Docker;
  /** The shared runtime (each task wraps it to watch the engine under its own id). */
  runtime: SandboxRuntime;
  /** Where the client points, for messages. */
  hostName: string;
}

export class TaskHost {
  readonly redaction: Redaction;
  readonly clock: Clock;
  private dockerSide: Promise<HostDocker> | null = null;

  constructor(
    /** The process's environment: where Docker is (DOCKER_HOST). */
    readonly env: NodeJS.ProcessEnv,
    readonly dependencies: AppDependencies = {},
    /** The process's redaction point (the CLI's, so stdout and stderr hide what the files hide). */
    redaction?: Redaction,
  ) {
    this.redaction = redaction ?? new Redaction();
    this.clock = dependencies.clock ?? systemClock;
  }

  /**
   * From here on the keys and `redact.patterns` of this configuration are hidden from every writer of the
   * process (stdout, stderr, journals, notes, logs); returns the redactor.
   */
  protect(config: Pick<Config, 'meta' | 'worker' | 'workers' | 'redact'>, env: NodeJS.ProcessEnv): Redactor {
    const secrets = configSecrets(config, env);
    this.redaction.add(secrets.values, secrets.patterns);
    return this.redaction.redact;
  }

  /** An ISO time stamp from the host's clock. */
  stamp(): string {
    return new Date(this.clock.now()).toISOString();
  }

  /**
   * The Docker client and runtime, made on first use. Imported here: dockerode is the biggest module of a
   * start, and planning does not need it.
   */
  docker(): Promise<HostDocker> {
    this.dockerSide ??= (async () => {
      const [client, { DockerSandboxRuntime }] = await Promise.all([
        import('../sandbox/docker-client.js'),
        import('../sandbox/docker-runtime.js'),
      ]);
      const docker = this.dependencies.docker ?? client.createDockerClient(this.env);
      const runtime =
        this.dependencies.runtime ??
        new DockerSandboxRuntime(docker, { version: VERSION, env: this.env, redact: this.redaction.redact });
      return { docker, runtime, hostName: client.describeDockerHost(this.env) };
    })();
    return this.dockerSide;
  }
}
