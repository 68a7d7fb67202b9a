import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus, signUpMember } from './support/control-api.js';
import { SseReader } from './support/orch-helpers.js';
import { waitFor } from './support/wait.js';

/**
 * Open event streams end with their access (issue 31, finding 3): a stream authenticated
 * once, when it opened, ends within 5 s (waited for up to 10 s here) of its token's
 * sign-out, revocation or expiry, its user's removal or its agent's deletion, with
 * `event: access-ended` last; the same token then gets 401 (404 for the deleted agent).
 * Every stream here is a real HTTP client of the control API on port 0.
 */
describe('open streams end with their access', function () {
  this.timeout(60_000);
  const ENDS_WITHIN_MS = 10_000;
  let control: TestControl;
  const readers: SseReader[] = [];

  before(async () => {
    control = await startControl();
  });
  afterEach(() => {
    for (const reader of readers.splice(0)) reader.close();
  });
  after(async () => control?.close());

  /** A stream opened with `token`, in the account `account` names (X-Account-Id) or the token's default one, on `on`. */
  const open = async (path: string, token: string, { on = control, account }: { on?: TestControl; account?: string } = {}) => {
    const reader = await SseReader.open(on.baseUrl + path, { Authorization: `Bearer ${token}`, ...(account ? { 'X-Account-Id': account } : {}) });
    readers.push(reader);
    return reader;
  };
  async function streaming(path: string, token: string, options?: { on?: TestControl; account?: string }): Promise<SseReader> {
    const reader = await open(path, token, options);
    assert.equal(reader.status, 200, reader.body);
    return reader;
  }
  /** Past two re-checks, each of `readers` still delivers samples, and none said its access ended. */
  async function stillOpen(readers: Record<string, SseReader>): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    for (const [name, reader] of Object.entries(readers)) {
      const seen = reader.frames.length;
      await reader.next(`another sample on ${name}`, (frame) => frame.event === 'metrics', 5_000, seen);
      assert.equal(reader.ended, false, `${name} ended: ${JSON.stringify(reader.frames.at(-1))}`);
      assert.ok(!reader.frames.some((frame) => frame.event === 'access-ended'), name);
    }
  }
  async function endsWith(reader: SseReader, reason: string): Promise<void> {
    await reader.ends(ENDS_WITHIN_MS);
    const last = reader.frames.at(-1);
    assert.equal(last?.event, 'access-ended', `frames: ${JSON.stringify(reader.frames)}`);
    assert.deepEqual(JSON.parse(last!.data), { reason });
  }
  async function refused(path: string, token: string, status: number): Promise<void> {
    const again = await open(path, token);
    assert.equal(again.status, status, again.body);
  }
  async function apiKeyOf(sessionToken: string): Promise<{ id: string; key: string }> {
    const created = await control.request('POST', '/api-keys', { token: sessionToken, body: { label: 'stream' } });
    expectStatus(created, 201);
    return created.body;
  }
  /** An agent with a deployment that stays in progress (no driver here), so its event stream stays open. */
  async function deployedAgent(token: string): Promise<{ id: string; deploymentId: string }> {
    const agent = await createAgent(control, token, { api_key: 'sk-test', deploy: { replicas: 1 } });
    const listed = await control.request('GET', `/agents/${agent.id}/deployments`, { token });
    expectStatus(listed, 200);
    return { id: agent.id, deploymentId: listed.body.deployments[0].id };
  }
  const logsOf = (agentId: string) => `/agents/${agentId}/logs/stream`;
  const metricsOf = (agentId: string, seconds = 1) => `/agents/${agentId}/metrics/stream?interval=${seconds}`;

  it('signing out ends the logs stream of that session; the token then gets 401', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const reader = await streaming(logsOf(agent.id), token);

    expectStatus(await control.request('POST', '/auth/logout', { token }), 204);
    await endsWith(reader, 'signed_out');
    await refused(logsOf(agent.id), token, 401);
  });

  it('revoking a personal API key ends the metrics stream it opened; the key then gets 401', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const apiKey = await apiKeyOf(token);
    const reader = await streaming(metricsOf(agent.id), apiKey.key);
    await reader.next('a first sample', (frame) => frame.event === 'metrics');

    expectStatus(await control.request('DELETE', `/api-keys/${apiKey.id}`, { token }), 204);
    await endsWith(reader, 'key_revoked');
    await refused(metricsOf(agent.id), apiKey.key, 401);
  });

  it('a session that expires ends its deployment event stream, found by the re-check; the token then gets 401', async () => {
    const { token } = await control.signUp();
    const agent = await deployedAgent(token);
    const path = `/agents/${agent.id}/deployments/${agent.deploymentId}/events`;
    const reader = await streaming(path, token);
    await reader.next('the queued step', (frame) => frame.event === 'progress');

    control.clock.advance((control.config.sessionTtlMinutes + 1) * 60_000);
    await endsWith(reader, 'token_invalid');
    await refused(path, token, 401);
  });

  it("removing a user from the account ends that user's stream; their token then gets 401", async () => {
    const owner = await control.signUp();
    const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
    const agent = await createAgent(control, owner.token);
    const reader = await streaming(logsOf(agent.id), viewer.token);

    expectStatus(await control.request('DELETE', `/account/users/${viewer.user.id}`, { token: owner.token }), 204);
    await endsWith(reader, 'user_removed');
    await refused(logsOf(agent.id), viewer.token, 401);
  });

  it("a member of two accounts: a role change, then a removal, in one ends that user's streams there only", async () => {
    const owner = await control.signUp();
    const teamAgent = await createAgent(control, owner.token);
    // An owner of an account of their own, who joins the owner's as a member through an invite.
    const colleague = await control.signUp();
    const ownAgent = await createAgent(control, colleague.token);
    const invited = await control.request('POST', '/account/invites', { token: owner.token, body: { email: colleague.user.email, role: 'member' } });
    expectStatus(invited, 201);
    expectStatus(await control.request('POST', `/auth/invites/${invited.body.link.split('#')[1]}/accept`, { token: colleague.token }), 200);
    const team = { account: owner.user.account_id as string };
    const inTeam = await streaming(metricsOf(teamAgent.id), colleague.token, team);
    const atHome = await streaming(metricsOf(ownAgent.id), colleague.token);

    expectStatus(await control.request('PATCH', `/account/users/${colleague.user.id}`, { token: owner.token, body: { role: 'viewer' } }), 200);
    await endsWith(inTeam, 'role_changed');
    // Every role reads streams: the same token opens it again, now as a viewer.
    const asViewer = await streaming(metricsOf(teamAgent.id), colleague.token, team);

    expectStatus(await control.request('DELETE', `/account/users/${colleague.user.id}`, { token: owner.token }), 204);
    await endsWith(asViewer, 'user_removed');
    const refusedInTeam = await open(metricsOf(teamAgent.id), colleague.token, team);
    assert.equal(refusedInTeam.status, 403, refusedInTeam.body);
    await stillOpen({ atHome });
  });

  it('deleting the account ends every stream of its users; their tokens then get 401', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token);
    const reader = await streaming(logsOf(agent.id), owner.token);

    expectStatus(await control.request('DELETE', '/account', { token: owner.token, body: { confirm: owner.user.account_id } }), 204);
    await endsWith(reader, 'account_deleted');
    await refused(logsOf(agent.id), owner.token, 401);
  });

  it('deleting the agent ends its stream; the token then gets 404 for it', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    // A sample a minute: the stream's own look at the agent comes too late, so only the deletion can end it.
    const reader = await streaming(metricsOf(agent.id, 60), token);

    expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    await endsWith(reader, 'agent_deleted');
    await refused(metricsOf(agent.id, 60), token, 404);
  });

  it('leaves the streams of other sessions, keys, users and agents open', async () => {
    const owner = await control.signUp();
    const second = await control.request('POST', '/auth/login', { body: { email: owner.user.email, password: owner.password } });
    expectStatus(second, 200);
    const otherSession: string = second.body.token;
    const member = await signUpMember(control, owner.user.account_id, 'member');
    const stranger = await control.signUp();
    const [kept, deleted] = [await createAgent(control, owner.token, { name: 'kept' }), await createAgent(control, owner.token, { name: 'deleted' })];
    const strangersAgent = await createAgent(control, stranger.token);
    const [revokedKey, keptKey] = [await apiKeyOf(otherSession), await apiKeyOf(otherSession)];

    const ending = {
      signedOut: await streaming(logsOf(kept.id), owner.token),
      revoked: await streaming(metricsOf(kept.id), revokedKey.key),
      removed: await streaming(logsOf(kept.id), member.token),
      agentGone: await streaming(metricsOf(deleted.id, 60), otherSession),
    };
    const staying = {
      otherSession: await streaming(metricsOf(kept.id), otherSession),
      otherKey: await streaming(metricsOf(kept.id), keptKey.key),
      stranger: await streaming(metricsOf(strangersAgent.id), stranger.token),
    };

    expectStatus(await control.request('POST', '/auth/logout', { token: owner.token }), 204);
    expectStatus(await control.request('DELETE', `/api-keys/${revokedKey.id}`, { token: otherSession }), 204);
    expectStatus(await control.request('DELETE', `/account/users/${member.user.id}`, { token: otherSession }), 204);
    expectStatus(await control.request('DELETE', `/agents/${deleted.id}`, { token: otherSession }), 204);
    await endsWith(ending.signedOut, 'signed_out');
    await endsWith(ending.revoked, 'key_revoked');
    await endsWith(ending.removed, 'user_removed');
    await endsWith(ending.agentGone, 'agent_deleted');

    await stillOpen(staying);
  });

  it('is documented on every stream of the OpenAPI document, with the reasons', async () => {
    const document = (await control.request('GET', '/openapi.json')).body;
    for (const path of ['/agents/{id}/logs/stream', '/agents/{id}/metrics/stream', '/agents/{id}/deployments/{deploymentId}/events']) {
      assert.match(document.paths[path].get.responses['200'].content['text/event-stream'].schema.description, /`event: access-ended`, `data: StreamAccessEnded`/, path);
    }
    assert.deepEqual(document.components.schemas.StreamAccessEnded.properties.reason.enum, ['signed_out', 'key_revoked', 'user_removed', 'role_changed', 'account_deleted', 'agent_deleted', 'sso_required', 'token_invalid']);
  });

  it('forgets a stream its client left', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const reader = await streaming(logsOf(agent.id), token);
    assert.equal(control.control.services.streams.size, 1);
    reader.close();
    await waitFor('the stream to be forgotten', async () => (control.control.services.streams.size === 0 ? true : undefined), 5_000, 20);
  });

  it('a sign-out in one copy of the control API ends the stream another copy serves, by its Redis announcement', async () => {
    const elsewhere = await startControl({}, { resume: { database: control.database } });
    try {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      const reader = await streaming(logsOf(agent.id), token, { on: elsewhere });
      // The other copy listens from its first open stream on.
      const channel = `${control.config.redisKeyPrefix}control:stream-access`;
      await waitFor('the other copy to listen', async () => {
        const [, listeners] = (await control.redis.pubsub('NUMSUB', channel)) as [string, number];
        return listeners > 0 ? true : undefined;
      }, 5_000, 20);

      expectStatus(await control.request('POST', '/auth/logout', { token }), 204);
      // The other copy's re-check would say token_invalid: signed_out is the announcement's.
      await endsWith(reader, 'signed_out');
    } finally {
      await elsewhere.close();
    }
  });
});
