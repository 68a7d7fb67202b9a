import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { loadConfig } from '../control/config/config.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectError, expectStatus } from './support/control-api.js';

/** A random private address per test, so counts other runs left in the shared Redis never meet it. */
const freshAddress = () => `10.${randomInt(0, 256)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;

describe('control API: registration is rate-limited per client address (issue 13, item 9)', () => {
  let control: TestControl;

  before(async () => {
    // Behind a proxy we trust, so each test can speak for an address of its own.
    control = await startControl({ REGISTRATION_RATE_LIMIT_PER_HOUR: '3', TRUST_PROXY: 'true' });
  });
  after(async () => control?.close());

  const register = (from: string, email = `reg-${randomBytes(4).toString('hex')}@example.com`) =>
    control.request('POST', '/auth/register', {
      body: { email, password: 'correct horse battery', name: 'Reg' },
      headers: { 'x-forwarded-for': from },
    });

  it('refuses the 4th registration of an hour from one address with 429 RATE_LIMIT_EXCEEDED and Retry-After, and creates no user', async () => {
    const address = freshAddress();
    for (let i = 1; i <= 3; i += 1) expectStatus(await register(address), 201);
    const email = `refused-${randomBytes(4).toString('hex')}@example.com`;
    const refused = await register(address, email);
    expectError(refused, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${refused.headers.get('retry-after')}`);
    assert.equal((await control.db('users').where({ email })).length, 0);
  });

  it('counts each address on its own, and allows the address again in the next hour', async () => {
    const busy = freshAddress();
    for (let i = 1; i <= 3; i += 1) expectStatus(await register(busy), 201);
    expectError(await register(busy), 429, 'RATE_LIMIT_EXCEEDED');
    expectStatus(await register(freshAddress()), 201);

    control.clock.advance(3_600_000);
    expectStatus(await register(busy), 201);
  });

  it('allows 10 registrations an hour per address unless REGISTRATION_RATE_LIMIT_PER_HOUR says otherwise', () => {
    const required = { DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', MASTER_KEY: randomBytes(32).toString('base64') };
    assert.equal(loadConfig(required).registrationRateLimitPerHour, 10);
    assert.equal(loadConfig({ ...required, REGISTRATION_RATE_LIMIT_PER_HOUR: '50' }).registrationRateLimitPerHour, 50);
    assert.throws(() => loadConfig({ ...required, REGISTRATION_RATE_LIMIT_PER_HOUR: '0' }), /REGISTRATION_RATE_LIMIT_PER_HOUR/);
  });
});
