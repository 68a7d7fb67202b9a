import assert from 'node:assert/strict';
import type { BillingCustomer, BillingProvider } from '../control/billing/provider.js';
import type { PlanName } from '../control/domain/plans.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';

/** A billing provider that knows the customers a test gives it and records every subscribe. */
class FakeBillingProvider implements BillingProvider {
  readonly name = 'fake';
  readonly customers = new Map<string, BillingCustomer>();
  readonly subscribed: { customer: string; plan: PlanName }[] = [];
  refuse = false;

  async customerFor(accountId: string): Promise<BillingCustomer | null> {
    return this.customers.get(accountId) ?? null;
  }

  async subscribe(customer: BillingCustomer, plan: PlanName): Promise<void> {
    if (this.refuse) throw new Error('card declined');
    this.subscribed.push({ customer: customer.id, plan });
  }
}

describe('control API: POST /account/subscription', () => {
  const subscribe = (control: TestControl, token: string, body: unknown) =>
    control.request('POST', '/account/subscription', { token, body });
  const planOf = async (control: TestControl, token: string) => (await control.request('GET', '/account/usage', { token })).body.plan;

  describe('without a billing provider (the default)', () => {
    let control: TestControl;
    before(async () => {
      control = await startControl();
    });
    after(async () => control?.close());

    it('answers 503 BILLING_NOT_CONFIGURED and leaves the plan alone', async () => {
      const { token } = await control.signUp();
      expectError(await subscribe(control, token, { plan: 'pro' }), 503, 'BILLING_NOT_CONFIGURED');
      assert.equal(await planOf(control, token), 'free');
    });

    it('still validates the body first: an unknown plan is 422 at body.plan', async () => {
      const { token } = await control.signUp();
      expectError(await subscribe(control, token, { plan: 'enterprise' }), 422, 'VALIDATION_ERROR', ['body', 'plan']);
      expectError(await subscribe(control, token, {}), 422, 'VALIDATION_ERROR');
      expectError(await subscribe(control, token, { plan: 'pro', coupon: 'x' }), 422, 'VALIDATION_ERROR');
    });

    it('is in the OpenAPI document with its body schema', async () => {
      const document = (await control.request('GET', '/openapi.json')).body;
      const operation = document.paths['/account/subscription']?.post;
      assert.ok(operation, 'POST /account/subscription is documented');
      for (const status of ['200', '403', '409', '503']) assert.ok(operation.responses[status], `response ${status} documented`);
      assert.ok(operation.requestBody, 'request body documented');
    });
  });

  describe('with a billing provider', () => {
    let control: TestControl;
    const billing = new FakeBillingProvider();
    before(async () => {
      control = await startControl({}, { billing });
    });
    after(async () => control?.close());

    async function customerOwner() {
      const owner = await control.signUp();
      billing.customers.set(owner.user.account_id, { id: `cus_${owner.user.account_id}` });
      return owner;
    }

    it('moves the owner\'s account to pro through the provider; the pro limits apply at once', async () => {
      const { token, user } = await customerOwner();
      for (let i = 1; i <= 10; i += 1) await createAgent(control, token, { name: `agent ${i}` });
      expectError(await control.request('POST', '/agents', { token, body: { name: 'eleventh' } }), 403, 'QUOTA_EXCEEDED');

      const response = await subscribe(control, token, { plan: 'pro' });
      expectStatus(response, 200);
      assert.equal(response.body.plan, 'pro');
      assert.equal(response.body.limits.max_agents, 100);
      assert.equal(response.body.limits.max_agent_rpm, 3000);
      assert.deepEqual(billing.subscribed.filter((s) => s.customer === `cus_${user.account_id}`), [{ customer: `cus_${user.account_id}`, plan: 'pro' }]);
      assert.equal(await planOf(control, token), 'pro');
      expectStatus(await control.request('POST', '/agents', { token, body: { name: 'eleventh' } }), 201);
    });

    it('re-projects the account\'s agents with the new plan\'s per-agent limit', async () => {
      const { token } = await customerOwner();
      const agent = await createAgent(control, token, { access: 'public' });
      const slug = new URL(agent.url).hostname.split('.')[0]!;
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '300');
      expectStatus(await subscribe(control, token, { plan: 'pro' }), 200);
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '3000');
      expectStatus(await subscribe(control, token, { plan: 'free' }), 200);
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '300');
    });

    it('answers 409 ALREADY_SUBSCRIBED for the current plan, without asking the provider', async () => {
      const { token } = await customerOwner();
      const before = billing.subscribed.length;
      expectError(await subscribe(control, token, { plan: 'free' }), 409, 'ALREADY_SUBSCRIBED');
      assert.equal(billing.subscribed.length, before);
    });

    it('answers 409 NO_BILLING_ACCOUNT when the provider has no customer for the account', async () => {
      const { token } = await control.signUp();
      expectError(await subscribe(control, token, { plan: 'pro' }), 409, 'NO_BILLING_ACCOUNT');
      assert.equal(await planOf(control, token), 'free');
    });

    it('keeps the plan when the provider refuses: 502 BILLING_PROVIDER_FAILED', async () => {
      const { token } = await customerOwner();
      billing.refuse = true;
      try {
        expectError(await subscribe(control, token, { plan: 'pro' }), 502, 'BILLING_PROVIDER_FAILED');
      } finally {
        billing.refuse = false;
      }
      assert.equal(await planOf(control, token), 'free');
    });

    it('lets only the owner change the plan', async () => {
      const owner = await customerOwner();
      for (const role of ['admin', 'member']) {
        const other = await signUpMember(control, owner.user.account_id, role);
        expectError(await subscribe(control, other.token, { plan: 'pro' }), 403, 'AUTHORISATION_DENIED');
      }
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      expectError(await subscribe(control, viewer.token, { plan: 'pro' }), 403, 'AUTHORISATION_DENIED');
      assert.equal(await planOf(control, owner.token), 'free');
    });

    it('subscribes once when the owner sends the same change twice in parallel', async () => {
      const { token, user } = await customerOwner();
      const responses = await Promise.all([subscribe(control, token, { plan: 'pro' }), subscribe(control, token, { plan: 'pro' })]);
      assert.deepEqual(responses.map((r) => r.status).sort(), [200, 409]);
      assert.equal(responses.find((r) => r.status === 409)!.body.code, 'ALREADY_SUBSCRIBED');
      assert.equal(billing.subscribed.filter((s) => s.customer === `cus_${user.account_id}`).length, 1);
    });

    it('needs a token', async () => {
      expectError(await control.request('POST', '/account/subscription', { body: { plan: 'pro' } }), 401, 'AUTHENTICATION_FAILED');
    });
  });
});
