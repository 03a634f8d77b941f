/**
 * The network policies on a real Docker engine: a sandbox wired to a real ModelGateway, probed from inside.
 * Every server here listens on this machine; the "public" and "local network" probes run where the sandbox has
 * no route, so the connect fails at once (ENETUNREACH) and no packet leaves.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { EnvironmentError } from '../../src/errors.js';
import { ModelGateway, type GatewayLimits } from '../../src/gateway/model-gateway.js';
import { startTaskGateway } from '../../src/gateway/task-gateway.js';
import {
  planSandboxNetwork,
  prepareSandboxNetwork,
  waitForRelay,
  type SandboxNetworkPlan,
} from '../../src/gateway/sandbox-network.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { probe, startGatewaySandbox, startHostServer } from '../support/gateway-sandbox.js';
import { builtWorkerImage } from '../support/worker-image.js';
import { ScriptedResponsesServer, assistantMessage } from '../support/scripted-responses-server.js';

const IMAGE = process.env.AGENT_RUNNER_TEST_BASE_IMAGE ?? 'agent-runner-base:bookworm';
const REAL_KEY = 'sk-test-real-upstream-key-0123456789abcdef';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
let bridgeGateway = '';
let upstream: ScriptedResponsesServer;

beforeAll(async () => {
  await runtime.ping();
  // The host's address on Docker's bridge (docker0), where a server on 0.0.0.0 is reachable from a container:
  // the network's gateway, which the default bridge does not always list (then: the subnet's first address).
  const bridge = (await docker.getNetwork('bridge').inspect()) as {
    IPAM: { Config: { Gateway?: string; Subnet?: string }[] };
  };
  const config = bridge.IPAM.Config[0];
  bridgeGateway = config?.Gateway ?? (config?.Subnet ?? '').replace(/\.\d+\/\d+$/, '.1');
  expect(bridgeGateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  upstream = await new ScriptedResponsesServer().start();
});

afterAll(async () => {
  await upstream.close();
});

async function startGateway(limits: Partial<GatewayLimits> = {}): Promise<ModelGateway> {
  const gateway = await ModelGateway.start({
    worker: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKey: REAL_KEY },
    limits,
  });
  onTestFinished(() => gateway.close());
  return gateway;
}

async function sandboxWith(
  plan: SandboxNetworkPlan,
  setup: string[] = [],
  image = IMAGE,
  limits: Partial<GatewayLimits> = {},
  options: { containerUserIsWorker?: boolean } = {},
) {
  const gateway = await startGateway(limits);
  const sandbox = await startGatewaySandbox(runtime, { image, gateway, plan, ...options });
  const setupResults = await prepareSandboxNetwork(runtime, sandbox.id, gateway, plan, {
    setup,
    workdir: '/tmp',
    timeoutMs: 60_000,
  });
  return { gateway, sandbox, setupResults };
}

/** Waits up to 2 s for node's inspector on 127.0.0.1:9229 and prints `inspector=open` or `inspector=closed`. */
const INSPECTOR_PROBE =
  'for i in $(seq 20); do (exec 3<>/dev/tcp/127.0.0.1/9229) 2>/dev/null && { echo inspector=open; exit 0; }; sleep 0.1; done; echo inspector=closed';

/**
 * What a hostile worker tries on the relay: SIGUSR1 (node's inspector on 9229, which runs any code in the
 * relay), then SIGKILL; says whether each signal was delivered, whether the inspector opened and whether the
 * relay still runs. Then a node of the worker's own is sent SIGUSR1 too: the probe's canary, it opens.
 */
const RELAY_ATTACK = String.raw`
relay=$(pgrep -of '^node /run/agent-runner/relay.cjs')
echo "relay=$relay uid=$(awk '/^Uid:/ {print $2}' /proc/$relay/status)"
kill -USR1 "$relay"; echo "usr1=$?"
${INSPECTOR_PROBE}
kill -KILL "$relay"; echo "kill=$?"
sleep 0.2
[ -d "/proc/$relay" ] && echo relay-alive=yes || echo relay-alive=no
node -e 'setTimeout(() => {}, 20000)' & own=$!
sleep 0.5; kill -USR1 "$own"
for i in $(seq 30); do (exec 3<>/dev/tcp/127.0.0.1/9229) 2>/dev/null && { echo own-node-inspector=open; break; }; sleep 0.1; done
kill -KILL "$own"
`;

async function bash(sandboxId: string, script: string): Promise<{ exitCode: number; output: string }> {
  const result = await runtime.exec(sandboxId, ['/bin/bash', '-c', script], { timeoutMs: 20_000 });
  return { exitCode: result.exitCode, output: `${result.stdoutTail}${result.stderrTail}` };
}

/** The gateway answers a model request from inside with the real key added upstream. */
async function expectModelReachable(sandboxId: string, gateway: ModelGateway): Promise<void> {
  upstream.enqueue({ kind: 'output', items: [assistantMessage('from upstream')] });
  const before = upstream.responseRequests().length;
  const reply = await runtime.exec(
    sandboxId,
    [
      'node',
      '-e',
      `fetch('http://127.0.0.1:8787/v1/responses', { method: 'POST', headers: { authorization: 'Bearer ' + process.env.AGENT_RUNNER_GATEWAY_TOKEN, 'content-type': 'application/json' }, body: '{"input":[]}' }).then(r => r.text()).then(t => console.log(t))`,
    ],
    { timeoutMs: 20_000 },
  );
  expect(reply.stdoutTail).toContain('from upstream');
  const seen = upstream.responseRequests().slice(before);
  expect(seen).toHaveLength(1);
  expect(seen[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
  expect(gateway.workerToken).not.toBe(REAL_KEY);
}

describe('gateway-only', () => {
  it('reaches the gateway and nothing else: not the host, not a public or local-network address', async () => {
    const hostServer = await startHostServer('host-service');
    const { gateway, sandbox } = await sandboxWith(
      planSandboxNetwork({ network: 'gateway-only', allowlist: [], setupNetwork: 'gateway-only' }, []),
    );
    await expectModelReachable(sandbox.id, gateway);
    // Only loopback exists.
    const interfaces = await bash(sandbox.id, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(interfaces.output.trim()).toBe('lo');
    // The host's other ports, on the bridge address and on the host's name for it.
    expect(await probe(runtime, sandbox.id, 'tcp', bridgeGateway, String(hostServer.port))).toBe(
      'error ENETUNREACH',
    );
    // A public address and local-network addresses: no route, so nothing is sent.
    for (const address of ['1.1.1.1', '192.168.1.1', '10.0.0.1']) {
      const attempt = await bash(sandbox.id, `exec 3<>/dev/tcp/${address}/80`);
      expect(attempt.exitCode).not.toBe(0);
      expect(attempt.output).toContain('Network is unreachable');
    }
    // The proxy refuses everything, even a host that exists.
    expect(await probe(runtime, sandbox.id, 'connect', 'localhost', String(hostServer.port))).toBe(
      'refused 403',
    );
    expect(await probe(runtime, sandbox.id, 'proxy-get', `http://localhost:${hostServer.port}/x`)).toContain(
      '403 agent-runner: the sandbox network policy allows no connection',
    );
    expect(hostServer.requests).toEqual([]);
    // A route the worker does not need is refused by the gateway before anything goes upstream (before the
    // token is even looked at; a wrong token on the allowed route is 401, see gateway-routes.test.ts).
    expect(await probe(runtime, sandbox.id, 'get', 'http://127.0.0.1:8787/v1/models', 'wrong')).toContain(
      '403',
    );
  });

  it('the worker can neither signal the relay nor switch its inspector on; as the container user it could', async () => {
    const plan = planSandboxNetwork(
      { network: 'gateway-only', allowlist: [], setupNetwork: 'gateway-only' },
      [],
    );
    // Before: the same container with the worker's uid as its user (init, keeper and relay the worker's).
    const before = await sandboxWith(plan, [], IMAGE, {}, { containerUserIsWorker: true });
    const old = await bash(before.sandbox.id, RELAY_ATTACK);
    expect(old.output, old.output).toMatch(/^relay=\d+ uid=10001$/m);
    expect(old.output).toContain('usr1=0');
    expect(old.output).toContain('kill=0');
    // The probe sees an inspector when one listens: a node of the worker's own, switched on by SIGUSR1.
    expect(old.output).toContain('own-node-inspector=open');

    const { sandbox } = await sandboxWith(plan);
    const now = await bash(sandbox.id, RELAY_ATTACK);
    expect(now.output, now.output).toMatch(/^relay=\d+ uid=10004$/m);
    expect(now.output).toContain('usr1=1');
    expect(now.output).toContain('kill=1');
    expect(now.output).toMatch(/Operation not permitted/);
    expect(now.output).toContain('inspector=closed');
    expect(now.output).toContain('relay-alive=yes');
    // Even its own uid cannot switch the relay's inspector on: the relay listens for SIGUSR1 itself.
    const own = await runtime.exec(
      sandbox.id,
      [
        '/bin/bash',
        '-c',
        `kill -USR1 $(pgrep -f '^node /run/agent-runner/relay.cjs'); echo usr1=$?; ${INSPECTOR_PROBE}`,
      ],
      { user: '10004:10004', timeoutMs: 20_000 },
    );
    expect(own.stdoutTail).toContain('usr1=0');
    expect(own.stdoutTail).toContain('inspector=closed');
    await waitForRelay(runtime, sandbox.id);
    const info = await docker.getContainer(sandbox.id).inspect();
    expect(info.State.Running).toBe(true);
  });
});

describe('allowlist', () => {
  it('lets a listed host through the proxy and refuses an unlisted one; direct connections still fail', async () => {
    const hostServer = await startHostServer('listed-service');
    const { sandbox } = await sandboxWith(
      planSandboxNetwork(
        { network: 'allowlist', allowlist: ['localhost'], setupNetwork: 'gateway-only' },
        [],
      ),
    );
    expect(await probe(runtime, sandbox.id, 'proxy-get', `http://localhost:${hostServer.port}/plain`)).toBe(
      '200 listed-service',
    );
    expect(await probe(runtime, sandbox.id, 'connect', 'localhost', String(hostServer.port))).toBe(
      'tunnel listed-service',
    );
    expect(hostServer.requests).toEqual(['GET /plain', 'GET /tunnel']);
    // 127.0.0.1 is the same service but not the listed name.
    expect(await probe(runtime, sandbox.id, 'connect', '127.0.0.1', String(hostServer.port))).toBe(
      'refused 403',
    );
    expect(await probe(runtime, sandbox.id, 'connect', 'example.com', '443')).toBe('refused 403');
    expect(await probe(runtime, sandbox.id, 'tcp', bridgeGateway, String(hostServer.port))).toBe(
      'error ENETUNREACH',
    );
    expect(hostServer.requests).toHaveLength(2);
    // Tools find the proxy in the environment.
    const env = await bash(sandbox.id, 'echo "$HTTPS_PROXY $NO_PROXY"');
    expect(env.output.trim()).toBe('http://127.0.0.1:8787 127.0.0.1,localhost');
  });

  it('a body over gateway.maxRequestBytes is refused with 413 before it reaches a listed host, counted as it streams', async () => {
    const hostServer = await startHostServer('listed-service');
    const { sandbox } = await sandboxWith(
      planSandboxNetwork(
        { network: 'allowlist', allowlist: ['localhost'], setupNetwork: 'gateway-only' },
        [],
      ),
      [],
      IMAGE,
      { maxRequestBytes: 1024 * 1024 },
    );
    const url = `http://localhost:${hostServer.port}/upload`;
    // The canary: a body under the cap reaches the listed host whole.
    expect(await probe(runtime, sandbox.id, 'proxy-post', url, String(512 * 1024))).toMatch(
      /^200 listed-service \| written 524288$/,
    );
    expect(hostServer.bodyBytes).toEqual([512 * 1024]);
    // 64 MiB: refused once the cap is passed; the sender never got to write it all.
    const huge = await probe(runtime, sandbox.id, 'proxy-post', url, String(64 * 1024 * 1024));
    const match =
      /^(?:413 agent-runner: a request body through the sandbox proxy is limited to 1048576 bytes[^|]*|error \w+) \| written (\d+)$/.exec(
        huge,
      );
    expect(match, huge).not.toBeNull();
    expect(huge).not.toContain('listed-service');
    expect(Number(match?.[1])).toBeLessThan(64 * 1024 * 1024);
    expect(hostServer.requests).toEqual(['POST /upload']);
  });

  it('npm reaches a listed registry through the proxy', async () => {
    // The worker image trusts this machine's CA bundle (TLS may be inspected on the way to the registry).
    const { sandbox } = await sandboxWith(
      planSandboxNetwork(
        { network: 'allowlist', allowlist: ['registry.npmjs.org'], setupNetwork: 'gateway-only' },
        [],
      ),
      [],
      await builtWorkerImage(docker),
    );
    const view = await runtime.exec(
      sandbox.id,
      ['npm', 'view', 'is-number@7.0.0', 'version', '--cache', '/tmp/npm-cache'],
      { timeoutMs: 60_000 },
    );
    expect(view.stdoutTail.trim()).toBe('7.0.0');
  });
});

describe('open', () => {
  it('is plain bridge networking (reaches a host server) and still reaches the model through the relay', async () => {
    const hostServer = await startHostServer('open-service');
    const { gateway, sandbox } = await sandboxWith(
      planSandboxNetwork({ network: 'open', allowlist: [], setupNetwork: 'gateway-only' }, []),
    );
    expect(await probe(runtime, sandbox.id, 'get', `http://${bridgeGateway}:${hostServer.port}/open`)).toBe(
      '200 open-service',
    );
    await expectModelReachable(sandbox.id, gateway);
  });
});

describe('setup phase', () => {
  it('runs setup under allowlist, then the same command fails under gateway-only', async () => {
    const hostServer = await startHostServer('registry-like');
    // What `npm ci` does in essence: an HTTP request through the proxy from the environment.
    const command = `node -e "require('http').get({host:'127.0.0.1',port:8787,path:'http://localhost:${hostServer.port}/pkg',headers:{host:'localhost'}},r=>{let b='';r.on('data',c=>b+=c);r.on('end',()=>{console.log(r.statusCode,b);process.exit(r.statusCode===200?0:1)})}).on('error',e=>{console.log(e.code);process.exit(1)})"`;
    const plan = planSandboxNetwork({ network: 'gateway-only', allowlist: [] }, ['localhost']);
    expect(plan.setup).toEqual({ policy: 'allowlist', allowlist: ['localhost'] });
    const { sandbox, setupResults } = await sandboxWith(plan, [command]);
    expect(setupResults).toHaveLength(1);
    expect(setupResults[0]?.result.exitCode).toBe(0);
    expect(setupResults[0]?.result.stdoutTail).toContain('200 registry-like');

    const later = await bash(sandbox.id, command);
    expect(later.exitCode).toBe(1);
    expect(later.output).toContain('403');
    expect(hostServer.requests).toEqual(['GET /pkg']);
  });

  it('runs setup on the open bridge, then disconnects it for the gateway-only worker phase', async () => {
    const hostServer = await startHostServer('setup-open');
    const command = `exec 3<>/dev/tcp/${bridgeGateway}/${hostServer.port} && echo reached`;
    const plan = planSandboxNetwork({ network: 'gateway-only', allowlist: [], setupNetwork: 'open' }, []);
    expect(plan.create).toEqual({ mode: 'bridge' });
    const { gateway, sandbox, setupResults } = await sandboxWith(plan, [command]);
    expect(setupResults[0]?.result.exitCode).toBe(0);
    expect(setupResults[0]?.result.stdoutTail).toContain('reached');

    const later = await bash(sandbox.id, command);
    expect(later.exitCode).not.toBe(0);
    expect(later.output).toContain('Network is unreachable');
    const interfaces = await bash(sandbox.id, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(interfaces.output.trim()).toBe('lo');
    await expectModelReachable(sandbox.id, gateway);
  });
});

describe('startTaskGateway', () => {
  it('plans from the config and the repository, and a failed setup names the command and the policy', async () => {
    const repoRoot = mkdtempSync(path.join(tmpdir(), 'gw-task-repo-'));
    onTestFinished(() => rmSync(repoRoot, { recursive: true, force: true }));
    writeFileSync(path.join(repoRoot, 'package.json'), '{}');
    const config = configSchema.parse({
      worker: { baseUrl: upstream.baseUrl('127.0.0.1'), apiKeyEnv: 'GW_TEST_WORKER_KEY' },
      sandbox: { setup: ['echo first', 'echo broken >&2; exit 3', 'echo never'] },
    });
    const taskGateway = await startTaskGateway({ config, env: { GW_TEST_WORKER_KEY: REAL_KEY }, repoRoot });
    onTestFinished(() => taskGateway.close());
    expect(taskGateway.plan.setup).toEqual({ policy: 'allowlist', allowlist: ['registry.npmjs.org'] });
    expect(taskGateway.plan.worker.policy).toBe('gateway-only');
    expect(taskGateway.codexProvider).toEqual({
      baseUrl: 'http://127.0.0.1:8787/v1',
      envKey: 'AGENT_RUNNER_GATEWAY_TOKEN',
    });
    expect(taskGateway.codexConfigOverrides).toEqual([]);
    expect(JSON.stringify(taskGateway.access)).not.toContain(REAL_KEY);

    const taskId = `gateway-test-${Date.now()}`;
    const info = await runtime.create({
      taskId,
      repoPath: repoRoot,
      image: IMAGE,
      user: { uid: 10001, gid: 10001 },
      mounts: taskGateway.access.mounts,
      workdir: '/tmp',
      env: taskGateway.access.env,
      limits: { cpus: 1, memoryBytes: 512 * 1024 ** 2, pids: 128 },
      network: taskGateway.access.network,
      keeper: taskGateway.access.keeper,
    });
    onTestFinished(async () => {
      await runtime.remove(info.id);
      expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
    });
    const logDir = mkdtempSync(path.join(tmpdir(), 'gw-setup-logs-'));
    onTestFinished(() => rmSync(logDir, { recursive: true, force: true }));
    const failure = taskGateway.setup(runtime, info.id, { workdir: '/tmp', logDir });
    await expect(failure).rejects.toBeInstanceOf(EnvironmentError);
    await expect(failure).rejects.toThrow(
      /sandbox\.setup command `echo broken >&2; exit 3` exited 3 under network policy allowlist \(registry\.npmjs\.org\): broken\. Run the same command in a fresh clone[^\n]*\n\n--- stderr ---\nbroken/,
    );
    expect(readFileSync(path.join(logDir, 'setup-1.stdout.log'), 'utf8')).toBe('first\n');
    expect(existsSync(path.join(logDir, 'setup-3.stdout.log'))).toBe(false);
  });
});
