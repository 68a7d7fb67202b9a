import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';

describe('control API: listing, reading, changing and deleting agents', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  /** Creates agents one second apart, as a real clock would, oldest first. */
  async function createSeveral(token: string, bodies: Record<string, unknown>[]): Promise<any[]> {
    const agents = [];
    for (const body of bodies) {
      control.clock.advance(1000);
      agents.push(await createAgent(control, token, body));
    }
    return agents;
  }

  const list = (token: string, query = '') => control.request('GET', `/agents${query}`, { token });

  describe('GET /agents', () => {
    it('lists the caller\'s agents newest first with the page envelope', async () => {
      const { token } = await control.signUp();
      const agents = await createSeveral(token, [{ name: 'one' }, { name: 'two' }, { name: 'three' }]);
      const response = await list(token);
      expectStatus(response, 200);
      assert.deepEqual(Object.keys(response.body).sort(), ['agents', 'has_next', 'page', 'page_size', 'total']);
      assert.deepEqual(response.body.agents.map((a: any) => a.name), ['three', 'two', 'one']);
      assert.equal(response.body.total, 3);
      assert.equal(response.body.page, 1);
      assert.equal(response.body.page_size, 20);
      assert.equal(response.body.has_next, false);
      assert.deepEqual(response.body.agents[2].id, agents[0].id);
    });

    it('answers an account without agents with an empty page', async () => {
      const { token } = await control.signUp();
      const response = await list(token);
      expectStatus(response, 200);
      assert.deepEqual(response.body, { agents: [], total: 0, page: 1, page_size: 20, has_next: false });
    });

    it('pages with page and page_size', async () => {
      const { token } = await control.signUp();
      await createSeveral(token, ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name })));
      const pages = [];
      for (const page of [1, 2, 3]) {
        const response = await list(token, `?page=${page}&page_size=2`);
        expectStatus(response, 200);
        pages.push(response.body);
      }
      assert.deepEqual(pages.map((p) => p.agents.map((a: any) => a.name)), [['e', 'd'], ['c', 'b'], ['a']]);
      assert.deepEqual(pages.map((p) => p.has_next), [true, true, false]);
      assert.deepEqual(pages.map((p) => [p.total, p.page, p.page_size]), [[5, 1, 2], [5, 2, 2], [5, 3, 2]]);

      const beyond = await list(token, '?page=4&page_size=2');
      expectStatus(beyond, 200);
      assert.deepEqual(beyond.body.agents, []);
      assert.equal(beyond.body.has_next, false);
      assert.equal(beyond.body.total, 5);
    });

    it('accepts page_size 1 and 100', async () => {
      const { token } = await control.signUp();
      await createSeveral(token, [{ name: 'a' }, { name: 'b' }]);
      const one = await list(token, '?page_size=1');
      expectStatus(one, 200);
      assert.equal(one.body.agents.length, 1);
      assert.equal(one.body.has_next, true);
      expectStatus(await list(token, '?page_size=100'), 200);
    });

    it('filters by status and by tag', async () => {
      const { token } = await control.signUp();
      const [stopped, pending] = await createSeveral(token, [
        { name: 'idle', tags: ['blue'] },
        { name: 'deployed', tags: ['blue', 'green'], deploy: { replicas: 1 } },
        { name: 'other', tags: ['red'] },
      ]);
      const byStatus = await list(token, '?status=pending');
      expectStatus(byStatus, 200);
      assert.deepEqual(byStatus.body.agents.map((a: any) => a.id), [pending.id]);
      assert.equal(byStatus.body.total, 1);

      const byTag = await list(token, '?tag=blue');
      assert.deepEqual(byTag.body.agents.map((a: any) => a.id), [pending.id, stopped.id]);
      const both = await list(token, '?tag=blue&status=stopped');
      assert.deepEqual(both.body.agents.map((a: any) => a.id), [stopped.id]);
      const none = await list(token, '?tag=purple');
      assert.deepEqual([none.body.agents, none.body.total], [[], 0]);
    });

    it('refuses bad query values with 422 at the parameter', async () => {
      const { token } = await control.signUp();
      expectError(await list(token, '?page=0'), 422, 'VALIDATION_ERROR', ['query', 'page']);
      expectError(await list(token, '?page=abc'), 422, 'VALIDATION_ERROR', ['query', 'page']);
      expectError(await list(token, '?page=1.5'), 422, 'VALIDATION_ERROR', ['query', 'page']);
      expectError(await list(token, '?page_size=0'), 422, 'VALIDATION_ERROR', ['query', 'page_size']);
      expectError(await list(token, '?page_size=101'), 422, 'VALIDATION_ERROR', ['query', 'page_size']);
      expectError(await list(token, '?status=bogus'), 422, 'VALIDATION_ERROR', ['query', 'status']);
    });

    it('shows only the caller\'s account', async () => {
      const mine = await control.signUp();
      const theirs = await control.signUp();
      const agent = await createAgent(control, mine.token, { name: 'mine' });
      await createAgent(control, theirs.token, { name: 'theirs' });
      const response = await list(mine.token);
      assert.deepEqual(response.body.agents.map((a: any) => a.id), [agent.id]);
    });
  });

  describe('GET /agents/{id}', () => {
    it('returns the agent with its version as ETag', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token, { name: 'read me', tags: ['t'] });
      const response = await control.request('GET', `/agents/${created.id}`, { token });
      expectStatus(response, 200);
      assert.deepEqual(response.body, { ...created, access_key: null });
      assert.equal(response.headers.get('etag'), `"${created.version}"`);
    });

    it('answers an unknown id with 404 NOT_FOUND', async () => {
      const { token } = await control.signUp();
      expectError(await control.request('GET', '/agents/agt_doesnotexist', { token }), 404, 'NOT_FOUND');
    });
  });

  describe('PATCH /agents/{id}', () => {
    it('changes access and rate_limit_rpm: version + 1, updated_at moves, new ETag', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token);
      control.clock.advance(5000);
      const response = await control.request('PATCH', `/agents/${created.id}`, { token, body: { access: 'public', rate_limit_rpm: 30 } });
      expectStatus(response, 200);
      const patched = response.body;
      assert.equal(patched.access, 'public');
      assert.equal(patched.rate_limit_rpm, 30);
      assert.equal(patched.access_key, null);
      assert.equal(patched.version, created.version + 1);
      assert.equal(patched.updated_at, control.clock.now().toISOString());
      assert.notEqual(patched.updated_at, created.updated_at);
      assert.equal(patched.created_at, created.created_at);
      assert.equal(response.headers.get('etag'), `"${patched.version}"`);

      const fetched = await control.request('GET', `/agents/${created.id}`, { token });
      assert.deepEqual(fetched.body, patched);
    });

    it('leaves omitted fields as they are, and null returns rate_limit_rpm to the default', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token, { rate_limit_rpm: 50 });
      const onlyAccess = await control.request('PATCH', `/agents/${created.id}`, { token, body: { access: 'public' } });
      expectStatus(onlyAccess, 200);
      assert.equal(onlyAccess.body.rate_limit_rpm, 50);
      const cleared = await control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: null } });
      expectStatus(cleared, 200);
      assert.equal(cleared.body.rate_limit_rpm, null);
      assert.equal(cleared.body.access, 'public');
      assert.equal(cleared.body.version, created.version + 2);
    });

    it('changes nothing for {} or for the current values: same version and updated_at', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token, { rate_limit_rpm: 10 });
      control.clock.advance(5000);
      for (const body of [{}, { access: 'private' }, { rate_limit_rpm: 10 }]) {
        const response = await control.request('PATCH', `/agents/${created.id}`, { token, body });
        expectStatus(response, 200);
        assert.equal(response.body.version, created.version, JSON.stringify(body));
        assert.equal(response.body.updated_at, created.updated_at, JSON.stringify(body));
      }
    });

    it('validates the body: only access and rate_limit_rpm, within their rules', async () => {
      const { token } = await control.signUp();
      const { id } = await createAgent(control, token);
      const patch = (body: unknown) => control.request('PATCH', `/agents/${id}`, { token, body });
      expectError(await patch({ access: 'hidden' }), 422, 'VALIDATION_ERROR', ['body', 'access']);
      expectError(await patch({ rate_limit_rpm: 0 }), 422, 'VALIDATION_ERROR', ['body', 'rate_limit_rpm']);
      expectError(await patch({ rate_limit_rpm: 100_001 }), 422, 'VALIDATION_ERROR', ['body', 'rate_limit_rpm']);
      expectError(await patch({ name: 'renamed' }), 422, 'VALIDATION_ERROR', ['body', 'name']);
      const unchanged = await control.request('GET', `/agents/${id}`, { token });
      assert.equal(unchanged.body.version, 1);
    });

    it('honours If-Match: the current version passes, a stale one is 412 PRECONDITION_FAILED', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token);
      const etag = (await control.request('GET', `/agents/${created.id}`, { token })).headers.get('etag')!;

      const first = await control.request('PATCH', `/agents/${created.id}`, { token, body: { access: 'public' }, headers: { 'if-match': etag } });
      expectStatus(first, 200);
      // A second writer still holding the old ETag loses.
      const stale = await control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: 5 }, headers: { 'if-match': etag } });
      expectError(stale, 412, 'PRECONDITION_FAILED');
      const after = await control.request('GET', `/agents/${created.id}`, { token });
      assert.equal(after.body.rate_limit_rpm, null);
      assert.equal(after.body.version, first.body.version);

      const fresh = await control.request('PATCH', `/agents/${created.id}`, {
        token,
        body: { rate_limit_rpm: 5 },
        headers: { 'if-match': first.headers.get('etag')! },
      });
      expectStatus(fresh, 200);
      assert.equal(fresh.body.rate_limit_rpm, 5);
    });

    it('lets exactly one of two parallel writers holding the same ETag win', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token);
      const etag = `"${created.version}"`;
      const [a, b] = await Promise.all([
        control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: 11 }, headers: { 'if-match': etag } }),
        control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: 22 }, headers: { 'if-match': etag } }),
      ]);
      assert.deepEqual([a.status, b.status].sort(), [200, 412]);
      const winner = a.status === 200 ? a : b;
      const fetched = await control.request('GET', `/agents/${created.id}`, { token });
      assert.equal(fetched.body.rate_limit_rpm, winner.body.rate_limit_rpm);
      assert.equal(fetched.body.version, created.version + 1);
    });

    it('accepts If-Match * and a weak ETag of the current version', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token);
      expectStatus(await control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: 7 }, headers: { 'if-match': '*' } }), 200);
      expectStatus(await control.request('PATCH', `/agents/${created.id}`, { token, body: { rate_limit_rpm: 8 }, headers: { 'if-match': `W/"${created.version + 1}"` } }), 200);
    });

    it('answers an If-Match that names no version with 412', async () => {
      const { token } = await control.signUp();
      const created = await createAgent(control, token);
      const response = await control.request('PATCH', `/agents/${created.id}`, { token, body: { access: 'public' }, headers: { 'if-match': '"abc"' } });
      expectError(response, 412, 'PRECONDITION_FAILED');
    });
  });

  describe('DELETE /agents/{id}', () => {
    it('deletes the agent and its access keys: 204, then 404', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      const extra = await control.request('POST', `/agents/${agent.id}/access-keys`, { token, body: { label: 'extra' } });
      expectStatus(extra, 201);

      const deleted = await control.request('DELETE', `/agents/${agent.id}`, { token });
      assert.equal(deleted.status, 204);
      assert.equal(deleted.body, undefined);
      expectError(await control.request('GET', `/agents/${agent.id}`, { token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${agent.id}/access-keys`, { token }), 404, 'NOT_FOUND');
      expectError(await control.request('DELETE', `/agents/${agent.id}`, { token }), 404, 'NOT_FOUND');
      assert.equal((await list(token)).body.total, 0);
      const keys = await control.db('access_keys').where({ agent_id: agent.id });
      assert.deepEqual(keys, []);
    });

    it('honours If-Match on delete', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token);
      const patched = await control.request('PATCH', `/agents/${agent.id}`, { token, body: { access: 'public' } });
      expectError(await control.request('DELETE', `/agents/${agent.id}`, { token, headers: { 'if-match': `"${agent.version}"` } }), 412, 'PRECONDITION_FAILED');
      expectStatus(await control.request('GET', `/agents/${agent.id}`, { token }), 200);
      const deleted = await control.request('DELETE', `/agents/${agent.id}`, { token, headers: { 'if-match': patched.headers.get('etag')! } });
      assert.equal(deleted.status, 204);
    });
  });

  describe('other accounts and roles', () => {
    it('answers another account\'s agent with 404 NOT_FOUND on every agent endpoint', async () => {
      const owner = await control.signUp();
      const agent = await createAgent(control, owner.token);
      const [key] = (await control.request('GET', `/agents/${agent.id}/access-keys`, { token: owner.token })).body.access_keys;
      const { token } = await control.signUp();
      const attempts = [
        control.request('GET', `/agents/${agent.id}`, { token }),
        control.request('PATCH', `/agents/${agent.id}`, { token, body: { access: 'public' } }),
        control.request('DELETE', `/agents/${agent.id}`, { token }),
        control.request('POST', `/agents/${agent.id}/deploy`, { token, body: {} }),
        control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } }),
        control.request('GET', `/agents/${agent.id}/logs`, { token }),
        control.request('GET', `/agents/${agent.id}/metrics`, { token }),
        control.request('GET', `/agents/${agent.id}/access-keys`, { token }),
        control.request('POST', `/agents/${agent.id}/access-keys`, { token, body: { label: 'stolen' } }),
        control.request('DELETE', `/agents/${agent.id}/access-keys/${key.id}`, { token }),
      ];
      for (const response of await Promise.all(attempts)) expectError(response, 404, 'NOT_FOUND');

      const untouched = await control.request('GET', `/agents/${agent.id}`, { token: owner.token });
      assert.equal(untouched.body.version, agent.version);
      assert.equal(untouched.body.access, 'private');
      assert.equal((await control.request('GET', `/agents/${agent.id}/access-keys`, { token: owner.token })).body.access_keys.length, 1);
    });

    it('answers another account\'s agent exactly like an id that does not exist', async () => {
      const owner = await control.signUp();
      const agent = await createAgent(control, owner.token);
      const { token } = await control.signUp();
      const foreign = await control.request('GET', `/agents/${agent.id}`, { token });
      const missing = await control.request('GET', '/agents/agt_00000000000000000000', { token });
      expectError(foreign, 404, 'NOT_FOUND');
      assert.deepEqual(foreign.body, missing.body);
    });

    it('lets a viewer read but not patch or delete: 403 AUTHORISATION_DENIED', async () => {
      const owner = await control.signUp();
      const agent = await createAgent(control, owner.token);
      const { token } = await signUpMember(control, owner.user.account_id, 'viewer');
      expectStatus(await list(token), 200);
      expectStatus(await control.request('GET', `/agents/${agent.id}`, { token }), 200);
      expectError(await control.request('PATCH', `/agents/${agent.id}`, { token, body: { access: 'public' } }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('DELETE', `/agents/${agent.id}`, { token }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: {} }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } }), 403, 'AUTHORISATION_DENIED');
      expectStatus(await control.request('GET', `/agents/${agent.id}`, { token: owner.token }), 200);
    });

    it('lets an admin of the account change and delete its agents', async () => {
      const owner = await control.signUp();
      const agent = await createAgent(control, owner.token);
      const { token } = await signUpMember(control, owner.user.account_id, 'admin');
      expectStatus(await control.request('PATCH', `/agents/${agent.id}`, { token, body: { access: 'public' } }), 200);
      assert.equal((await control.request('DELETE', `/agents/${agent.id}`, { token })).status, 204);
    });

    it('follows a role change made in the database on the next request', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      await createAgent(control, member.token);
      await control.db('account_members').where({ user_id: member.user.id, account_id: member.user.account_id }).update({ role: 'viewer' });
      expectError(await control.request('POST', '/agents', { token: member.token, body: { name: 'now denied' } }), 403, 'AUTHORISATION_DENIED');
    });
  });
});
