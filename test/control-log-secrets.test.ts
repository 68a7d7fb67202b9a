import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { connectDatabase } from '../control/db/database.js';
import { freePort } from '../scripts/lib/local-services.js';
import { TEMPLATE_DATABASE } from './support/global.js';
import { startSmtpInbox, type SmtpInbox } from './support/smtp-inbox.js';
import { waitFor } from './support/wait.js';

/** The real control API process, at debug level: whatever it prints must hold no secret. */
describe('control API logs', function () {
  this.timeout(60_000);
  let child: ChildProcess;
  let output = '';
  let base = '';
  let inbox: SmtpInbox;
  // The process is given a password the mail server refuses, so its failure to mail an invite is logged too.
  const smtpPassword = `smtp-${randomBytes(8).toString('hex')}`;

  before(async () => {
    inbox = await startSmtpInbox('mailer', 'another-password');
    const templateUrl = process.env.TEST_TEMPLATE_DATABASE_URL!;
    const database = `t_${randomBytes(6).toString('hex')}`;
    const admin = connectDatabase(templateUrl.replace(/\/[^/]+$/, '/postgres'), { min: 0, max: 1 });
    await admin.raw(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE_DATABASE}`);
    await admin.destroy();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../control/main.ts')], {
      env: {
        ...process.env,
        DATABASE_URL: templateUrl.replace(/\/[^/]+$/, `/${database}`),
        REDIS_URL: process.env.TEST_REDIS_URL,
        REDIS_KEY_PREFIX: `${database}:`,
        MASTER_KEY: randomBytes(32).toString('base64'),
        // Every suite registers from 127.0.0.1 into the run's one Redis: the per-address limit would trip.
        REGISTRATION_RATE_LIMIT_PER_HOUR: '1000000',
        CONTROL_PORT: String(port),
        // Any free port: the default 7072 may be taken by another control API on this host.
        CONTROL_METRICS_PORT: '0',
        // Off: the default 7090 may be taken too, and nothing here calls agent services.
        AGENT_SERVICES_PORT: '0',
        PODMAN_INSTANCE: `test-${database}`,
        LOG_LEVEL: 'debug',
        SMTP_URL: inbox.url.replace('another-password', smtpPassword),
        PUBLIC_API_URL: 'http://console.test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor('the control API', async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), 30_000);
  });

  after(async () => {
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
    await inbox?.close();
  });

  const post = async (path: string, body: unknown, token?: string) => {
    const response = await fetch(`${base}/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return (await response.json()) as any;
  };

  it('never print a password, token, key, model key or secret value', async () => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const modelKey = `sk-${randomBytes(12).toString('hex')}`;
    const secretValue = `secret-${randomBytes(8).toString('hex')}`;
    const email = `logs-${randomBytes(3).toString('hex')}@example.com`;
    const registered = await post('/auth/register', { email, password, name: 'Logs' });
    await post('/auth/login', { email, password: 'a wrong password' });
    const login = await post('/auth/login', { email, password });
    const apiKey = await post('/api-keys', { label: 'ci' }, login.token);
    const agent = await post('/agents', { name: 'logged', api_key: modelKey, deploy: { replicas: 0, env: [{ key: 'TOKEN', value: secretValue, secret: true }] } }, apiKey.key);
    const accessKey = await post(`/agents/${agent.id}/access-keys`, { label: 'caller' }, apiKey.key);
    await post('/agents', { name: 'x' }, 'agnt_not-a-real-key');
    const invite = await post('/account/invites', { email: `invited-${email}`, role: 'member' }, login.token);
    const inviteSecret = String(invite.link).split('#')[1]!;
    const invited = await post(`/auth/invites/${inviteSecret}/accept`, { name: 'Invited', password });
    assert.ok(invited.token, 'the invite was accepted');
    await waitFor('the failed invite mail in the log', async () => (output.includes('invite mail not sent') ? true : undefined), 15_000);
    await new Promise((done) => setTimeout(done, 300)); // let the last lines reach the pipe

    assert.match(output, /"msg":"request"/, 'the process logged its requests');
    assert.match(output, /\/v1\/auth\/invites\/\*\*\*\/accept/, 'the accept request is logged, its secret masked');
    for (const secret of [password, modelKey, secretValue, registered.token, login.token, apiKey.key, agent.access_key, accessKey.key, 'agnt_not-a-real-key', inviteSecret, invited.token, smtpPassword]) {
      assert.ok(secret && !output.includes(secret), `a secret (${String(secret).slice(0, 5)}…) appears in the log`);
    }
  });
});
