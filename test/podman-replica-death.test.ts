import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { startControl, type TestControl } from './support/control-harness.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { createRunningAgent, podman } from './support/orch-helpers.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 31, finding 1, on real containers, the local edge and real authz: the only replica
 * of an agent is killed (SIGKILL) under steady traffic. netavark removes the agent's
 * bridge right after; without the pool's unreachable route its old address followed the
 * default route off the host, and the edge, still holding the dead replica, sent callers'
 * requests there (a foreign server answered 404). Here every answer after the kill must
 * be the edge's own 502 or 503, and an nftables counter of the test's own must see no
 * packet for that address leave through any interface but the agent's bridge.
 *
 * Polls are 30 s apart, so the replica can only leave routing in time through the
 * driver's container-death event.
 */
describe('podman: the only replica of an agent dies under traffic', function () {
  this.timeout(180_000);
  const table = `test_agent_leak_${process.pid}`;
  let control: TestControl;
  let edge: LocalEdgeStack;

  before(async () => {
    control = await startControl({ RESTART_BUDGET: '0', PODMAN_POLL_INTERVAL_MS: '30000' }, { orchestrate: true });
    edge = await startLocalEdgeStack(control);
  });

  after(async () => {
    execFileSync('nft', ['-f', '-'], { input: `table inet ${table}\ndelete table inet ${table}\n` });
    await edge?.close();
    await control?.close();
  });

  /** One GET through the edge from `source`; its status, or 0 when the edge did not answer in time. */
  function call(host: string, source: string): Promise<number> {
    return new Promise((resolve) => {
      const request = httpRequest({ host: '127.0.0.1', port: edge.port, path: '/health', localAddress: source, headers: { host }, agent: false, timeout: 5_000 }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('timeout', () => request.destroy());
      request.on('error', () => resolve(0));
      request.end();
    });
  }

  /** Packets the test's table counted, by rule comment. */
  function counted(): Record<string, number> {
    const listing = execFileSync('nft', ['list', 'table', 'inet', table], { encoding: 'utf8' });
    return Object.fromEntries([...listing.matchAll(/counter packets (\d+) bytes \d+ comment "([a-z-]+)"/g)].map((m) => [m[2]!, Number(m[1])]));
  }

  it('answers 502 or 503 from the kill on, and no packet for the replica leaves the host', async () => {
    const { token } = await control.signUp();
    const { id, agent, replica } = await createRunningAgent(control, token, { access: 'public' });
    const host = new URL(agent.url).hostname;
    const [address] = replica.address.split(':');
    const [network] = JSON.parse((await podman(control, ['network', 'inspect', `agent-${id}`])).stdout);
    const bridge: string = network.network_interface;
    assert.ok(control.config.podman.agentSubnets.contains(address!), `the replica's ${address} lies in the agent subnet pool`);

    // Output (the edge, on this host) and forward (a container): the agent's bridge, and every other way out.
    const rules = (hook: string) => [
      `  chain ${hook} {`,
      `    type filter hook ${hook} priority filter - 20; policy accept;`,
      `    ip daddr ${address} oifname "${bridge}" counter comment "${hook}-bridge"`,
      `    ip daddr ${address} oifname != "${bridge}" counter comment "${hook}-elsewhere"`,
      '  }',
    ];
    execFileSync('nft', ['-f', '-'], { input: [`table inet ${table} {`, ...rules('output'), ...rules('forward'), '}', ''].join('\n') });

    // Steady traffic: two callers in a loop, each request from an address of its own (per-caller
    // limits), 50 ms apart: about 150 requests in all, well inside the free plan's 300 a minute
    // per agent, so no answer is a 429.
    const answers: { sentAt: number; status: number }[] = [];
    let stop = false;
    let source = 0;
    const caller = async () => {
      while (!stop) {
        const sentAt = Date.now();
        const status = await call(host, `127.0.3.${(source++ % 250) + 1}`);
        answers.push({ sentAt, status });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const callers = [caller(), caller()];
    await waitFor('the agent answering through the edge', async () => (answers.filter((a) => a.status === 200).length >= 10 ? true : undefined), 30_000, 50);

    const killed = await podman(control, ['kill', '--signal', 'KILL', replica.id]);
    assert.equal(killed.code, 0, killed.stderr);
    const killedAt = Date.now();
    // With polls 30 s apart, only the death event takes the replica out of routing this soon.
    await waitFor('the dead replica out of routing', async () => {
      const status = await control.driver!.status(id);
      return status?.replicas.some((r) => r.address === replica.address) ? undefined : true;
    }, 10_000, 20);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    stop = true;
    await Promise.all(callers);

    const after = answers.filter((a) => a.sentAt > killedAt);
    assert.ok(after.length >= 20, `steady traffic went on after the kill (${after.length} requests)`);
    const statuses = [...new Set(after.map((a) => a.status))].sort();
    assert.ok(statuses.every((s) => s === 502 || s === 503), `after the kill the edge answered ${JSON.stringify(statuses)}: every answer must be its own 502 or 503`);
    assert.equal(after.at(-1)!.status, 503, 'with the replica gone the edge has no replica to send to');

    const counts = counted();
    assert.ok(counts['output-bridge']! > 0, `the counter saw no traffic to the replica through its bridge (${JSON.stringify(counts)}): it proves nothing`);
    assert.equal(counts['output-elsewhere'], 0, `${counts['output-elsewhere']} packet(s) for the dead replica left through another interface`);
    assert.equal(counts['forward-elsewhere'], 0, `${counts['forward-elsewhere']} forwarded packet(s) for the dead replica left through another interface`);
  });
});
