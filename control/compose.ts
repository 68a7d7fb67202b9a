import type Koa from 'koa';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../contract/clock.js';
import type { Config } from './config.js';
import { SecretBox } from './crypto/secret-box.js';
import { createApp } from './http/app.js';
import { READINESS_TIMEOUT_MS, readinessCheck } from './readiness.js';
import { bearerAuthenticator } from './http/authenticate.js';
import { accessKeyRoutes } from './http/routes/access-keys.js';
import { accountRoutes } from './http/routes/account.js';
import { agentRoutes } from './http/routes/agents.js';
import { apiKeyRoutes } from './http/routes/api-keys.js';
import { authRoutes } from './http/routes/auth.js';
import { lifecycleRoutes } from './http/routes/lifecycle.js';
import { observabilityRoutes } from './http/routes/observability.js';
import { openApiRoute } from './http/routes/openapi.js';
import type { Orchestrator } from './orchestrator/types.js';
import { agentUrl } from './services/agent-presenter.js';
import { AgentRunner } from './services/agent-runner.js';
import { DeploymentService } from './services/deployment-service.js';
import { ObservabilityService } from './services/observability-service.js';
import { AccessKeyService } from './services/access-key-service.js';
import { AgentService } from './services/agent-service.js';
import { ApiKeyService } from './services/api-key-service.js';
import { AuthService } from './services/auth-service.js';
import { FixedWindowLimiter } from './services/rate-limiter.js';
import { UsageService } from './services/usage-service.js';
import { EdgeSync } from './services/edge-sync.js';
import { EdgeProjection } from './edge/projection.js';
import type { BillingProvider } from './billing/provider.js';
import { SubscriptionService } from './services/subscription-service.js';

export interface ControlDependencies {
  config: Config;
  db: Knex;
  redis: Redis;
  clock: Clock;
  logger: Logger;
  /** What runs the agents; without one, agents are recorded but nothing starts them. */
  orchestrator?: Orchestrator;
  /** Takes plan changes (POST /account/subscription); none by default, which answers 503. */
  billing?: BillingProvider;
}

export interface Control {
  app: Koa;
  services: ReturnType<typeof buildServices>;
}

/** The composition root: every service gets its collaborators here, and only here. */
export function buildServices({ config, db, redis, clock, logger, orchestrator, billing }: ControlDependencies) {
  const box = new SecretBox(config.masterKey);
  const limiter = new FixedWindowLimiter(redis, clock);
  const edge = new EdgeSync(db, new EdgeProjection(redis), orchestrator, logger.child({ component: 'edge-sync' }));
  const accessKeys = new AccessKeyService(db, clock, edge);
  const presenter = { agentUrl: config.agentUrl, runtimeImage: config.runtimeImage };
  const jobSettings = { runtimeImage: config.runtimeImage, urlOf: (slug: string) => agentUrl(slug, config.agentUrl) };
  const runner = orchestrator ? new AgentRunner(db, orchestrator, box, jobSettings, clock, logger, edge, config.orchestratorConcurrency) : undefined;
  return {
    edge,
    runner,
    deployments: new DeploymentService(db, clock, box, runner, presenter),
    observability: new ObservabilityService(db, orchestrator, clock),
    limiter,
    auth: new AuthService(db, clock, limiter, {
      registrationMode: config.registrationMode,
      sessionTtlMinutes: config.sessionTtlMinutes,
      loginRateLimitPerMinute: config.loginRateLimitPerMinute,
      registrationRateLimitPerHour: config.registrationRateLimitPerHour,
    }),
    apiKeys: new ApiKeyService(db, clock),
    accessKeys,
    agents: new AgentService(db, clock, box, accessKeys, presenter, runner, edge),
    usage: new UsageService(db, redis, clock),
    subscriptions: new SubscriptionService(db, edge, billing, logger.child({ component: 'subscriptions' })),
  };
}

export function buildControl(deps: ControlDependencies): Control {
  const services = buildServices(deps);
  const routes = [
    ...authRoutes(services.auth),
    ...apiKeyRoutes(services.apiKeys),
    ...agentRoutes(services.agents),
    ...lifecycleRoutes(services.deployments),
    ...observabilityRoutes(services.observability),
    ...accessKeyRoutes(services.accessKeys),
    ...accountRoutes(services.usage, services.subscriptions),
  ];
  const serverUrl = `http://${deps.config.host}:${deps.config.port}/v1`;
  const app = createApp({
    routes: [...routes, openApiRoute(routes, serverUrl)],
    authenticate: bearerAuthenticator(services.auth, services.limiter, deps.config.tokenRateLimitPerMinute, deps.logger),
    checkReadiness: readinessCheck(
      { postgres: () => deps.db.raw('select 1'), redis: () => deps.redis.ping() },
      READINESS_TIMEOUT_MS,
      deps.logger.child({ component: 'readiness' }),
    ),
    logger: deps.logger,
    trustProxy: deps.config.trustProxy,
  });
  return { app, services };
}
