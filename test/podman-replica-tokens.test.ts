import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ReplicaTokenFiles, type AgentServicesAccess } from '../control/orchestrator/podman/replica-tokens.js';
import { ManualClock } from './support/manual-clock.js';

/**
 * The replica token files of issue 37: what a replica reads at AGENT_SERVICES_TOKEN_FILE
 * through its read-only mount. The mint here numbers its tokens, so a test sees which one
 * a replica holds; the real one (HMAC, scoped to the agent) is tested in agent-sessions.
 */
describe('podman replica token files', () => {
  const LIFE_MS = 3_600_000;
  let directory: string;
  let clock: ManualClock;
  let minted: string[];
  let files: ReplicaTokenFiles;

  beforeEach(() => {
    directory = join(mkdtempSync(join(tmpdir(), 'replica-tokens-')), 'tokens');
    clock = new ManualClock(new Date('2026-11-27T10:00:00Z'));
    minted = [];
    const access: AgentServicesAccess = {
      url: 'http://host.containers.internal:7090',
      port: 7090,
      directory,
      maxSessionBytes: 1_048_576,
      mint: (agentId, replicaId) => {
        const token = `t${minted.length + 1}-${agentId}-${replicaId}`;
        minted.push(token);
        return { token, expiresAt: new Date(clock.now().getTime() + LIFE_MS) };
      },
    };
    files = new ReplicaTokenFiles(access, clock, pino({ level: 'silent' }));
  });
  afterEach(() => rmSync(join(directory, '..'), { recursive: true, force: true }));

  const tokenOf = (replicaId: string) => readFileSync(join(directory, replicaId, 'token'), 'utf8').trim();

  it('gives a replica a directory to mount with its token, readable by any container user, under a directory only its owner enters', () => {
    const mounted = files.prepare('agent-a-1', 'agt_A');
    assert.equal(mounted, join(directory, 'agent-a-1'));
    assert.equal(tokenOf('agent-a-1'), 't1-agt_A-agent-a-1');
    assert.equal(statSync(join(mounted, 'token')).mode & 0o777, 0o644);
    assert.equal(statSync(directory).mode & 0o777, 0o700, "no other user of the host reaches a replica's token");
  });

  it('renews a token once half its life has passed, by a rename inside the mounted directory, and not before', () => {
    files.prepare('agent-a-1', 'agt_A');
    const inode = statSync(join(directory, 'agent-a-1')).ino;
    clock.advance(LIFE_MS / 2 - 1000);
    files.keepFresh([{ replicaId: 'agent-a-1', agentId: 'agt_A' }], { removeOthers: true });
    assert.equal(tokenOf('agent-a-1'), 't1-agt_A-agent-a-1', 'still young: kept');
    clock.advance(2000);
    files.keepFresh([{ replicaId: 'agent-a-1', agentId: 'agt_A' }], { removeOthers: true });
    assert.equal(tokenOf('agent-a-1'), 't2-agt_A-agent-a-1', 'past half its life: renewed');
    assert.equal(statSync(join(directory, 'agent-a-1')).ino, inode, 'the mounted directory is the same one');
    assert.equal(existsSync(join(directory, 'agent-a-1', '.token.next')), false);
  });

  it('writes a token for a replica it does not hold (adopted after a restart), and removes the directories of replicas gone only once told to', () => {
    files.prepare('agent-a-1', 'agt_A');
    files.keepFresh([{ replicaId: 'agent-b-1', agentId: 'agt_B' }], { removeOthers: false });
    assert.equal(tokenOf('agent-b-1'), 't2-agt_B-agent-b-1');
    assert.ok(existsSync(join(directory, 'agent-a-1')), 'still adopting: nothing removed');
    files.keepFresh([{ replicaId: 'agent-b-1', agentId: 'agt_B' }], { removeOthers: true });
    assert.equal(existsSync(join(directory, 'agent-a-1')), false);
    assert.equal(minted.length, 2, 'the held token of agent-b-1 was not minted again');
  });

  it('neither writes nor drops the token of a replica being removed, so a listing taken before its removal ended cannot bring it back', () => {
    files.prepare('agent-a-1', 'agt_A');
    const leaving = new Set(['agent-a-1']);
    clock.advance(LIFE_MS / 2 + 1000);
    files.keepFresh([{ replicaId: 'agent-a-1', agentId: 'agt_A' }], { removeOthers: true, leaving });
    assert.equal(tokenOf('agent-a-1'), 't1-agt_A-agent-a-1', 'past half its life, yet not renewed while it is being removed');
    files.keepFresh([], { removeOthers: true, leaving });
    assert.ok(existsSync(join(directory, 'agent-a-1')), 'kept while it stops: a request on its way may still read it');

    // The removal ended (AgentContainers.remove drops the directory); a tick that listed the container just before runs now.
    files.forget('agent-a-1');
    files.keepFresh([{ replicaId: 'agent-a-1', agentId: 'agt_A' }], { removeOthers: true, leaving });
    assert.equal(existsSync(join(directory, 'agent-a-1')), false, 'not written again');
    assert.equal(minted.length, 1);
  });

  it('refuses a replica id that is no plain directory name', () => {
    assert.throws(() => files.prepare('../escape', 'agt_A'), /refusing a replica id/);
  });
});
