import type Koa from 'koa';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../contract/clock.js';
import type { Config } from './config/config.js';
import { SecretBox } from './crypto/secret-box.js';
import { AgentTokens } from './crypto/agent-token.js';
import { nomadAllocationLiveness } from './orchestrator/nomad/allocation-liveness.js';
import { nomadIdentityKeys } from './orchestrator/nomad/identity-keys.js';
import { ReplicaCredentials } from './services/replica-credentials.js';
import { createAgentServicesApp } from './http/agent-services/app.js';
import { agentSessionRoutes } from './http/routes/agent-sessions.js';
import { AgentSessionService } from './services/agent-session-service.js';
import { SessionOwnerService } from './services/session-owner-service.js';
import { SessionSweeper } from './services/session-sweeper.js';
import { TraceIngest, type SpansDroppedObserver } from './services/trace-ingest.js';
import { EdgeSpanIntake } from './services/edge-span-intake.js';
import { TracePartitionKeeper } from './services/trace-partition-keeper.js';
import { TraceForwarder, type ForwardDroppedObserver } from './services/trace-forwarder.js';
import { InvocationService } from './services/invocation-service.js';
import { invocationRoutes } from './http/routes/invocations.js';
import { createApp } from './http/app.js';
import { CONSOLE_BUILD_DIR } from './http/console-static.js';
import { READINESS_TIMEOUT_MS, readinessCheck } from './http/readiness.js';
import { bearerAuthenticator } from './http/authenticate.js';
import { accessKeyRoutes } from './http/routes/access-keys.js';
import { accountRoutes } from './http/routes/account.js';
import { accountUserRoutes } from './http/routes/account-users.js';
import { accountInviteRoutes } from './http/routes/account-invites.js';
import { auditEventRoutes } from './http/routes/audit-events.js';
import { agentRoutes } from './http/routes/agents.js';
import { apiKeyRoutes } from './http/routes/api-keys.js';
import { authRoutes } from './http/routes/auth.js';
import { deploymentRoutes } from './http/routes/deployments.js';
import { deploymentEventRoutes } from './http/routes/deployment-events.js';
import { lifecycleRoutes } from './http/routes/lifecycle.js';
import { observabilityRoutes } from './http/routes/observability.js';
import { apiDocument, documentServerUrl } from './http/routes/openapi.js';
import { versionRoute } from './http/routes/version.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { domainRoutes } from './http/routes/domains.js';
import { acmeClientSource } from './domains/acme-account.js';
import { createTxtVerifier } from './domains/txt-verifier.js';
import { DomainService } from './services/domain-service.js';
import { DomainWorker } from './services/domain-worker.js';
import type { StartedDriver } from './orchestrator/create.js';
import { agentUrl } from './services/agent-presenter.js';
import { subscribeAgentObserved, subscribeReconcilePassed, subscribeReplicasChanged, subscribeRolloutStepReported } from './services/agent-events.js';
import { AgentRunner } from './services/agent-runner.js';
import { DeploymentService } from './services/deployment-service.js';
import { PlatformScaling } from './services/platform-scaling.js';
import { ReplicaChanges } from './services/replica-changes.js';
import { DeploymentHistoryService } from './services/deployment-history.js';
import { DeploymentRecorder } from './services/deployment-recorder.js';
import { DeploymentEventFeed } from './services/deployment-event-feed.js';
import { DeploymentTracker } from './services/deployment-tracker.js';
import { EventNotifier } from './services/event-notifier.js';
import { ObservabilityService } from './services/observability-service.js';
import { OpenStreams } from './services/open-streams.js';
import { AccessKeyService } from './services/access-key-service.js';
import { AccountService } from './services/account-service.js';
import { InviteService } from './services/invite-service.js';
import { smtpInviteMailer } from './services/invite-mailer.js';
import { AuditEventService } from './services/audit-event-service.js';
import { AgentService } from './services/agent-service.js';
import { ApiKeyService } from './services/api-key-service.js';
import { AuthService } from './services/auth-service.js';
import { SsoService } from './services/sso-service.js';
import { OidcClient } from './services/sso-client.js';
import { ssoRoutes } from './http/routes/sso.js';
import { FixedWindowLimiter, LeasedWindowLimiter } from './services/rate-limiter.js';
import { UsageService } from './services/usage-service.js';
import { EdgeSync } from './services/edge-sync.js';
import { EdgeProjection } from './edge/projection.js';
import { RequestFiguresReader } from './edge/request-figures.js';
import type { BillingProvider } from './billing/provider.js';
import { SubscriptionService } from './services/subscription-service.js';
import { Housekeeping } from './services/housekeeping.js';
import { Reconciler } from './services/reconciler.js';
import { Autoscaler } from './services/autoscaler.js';
import { ReplicaMeter } from './services/replica-meter.js';
import { IdleParker } from './services/idle-parker.js';
import { WakeListener } from './services/wake-listener.js';
import { UsageFlusher } from './services/usage-flusher.js';
import { WebhookDispatcher } from './services/webhook-dispatcher.js';
import { WebhookEvents } from './services/webhook-events.js';
import { WebhookSender } from './services/webhook-sender.js';
import { WebhookService } from './services/webhook-service.js';
import { exclusivePass, LOOP_LOCKS } from './services/exclusive-pass.js';
import type { PassObserver } from './services/periodic-pass.js';
import { pingDatabase } from './db/database.js';
import { createControlMetrics, type ControlMetrics } from './metrics/control-metrics.js';
import { instrumentOrchestrator } from './orchestrator/instrumented.js';
import { repositoriesOn } from './repositories/index.js';
import { CanaryService } from './services/canary-service.js';
import { PlatformError } from './domain/errors.js';
import { CanaryJudge } from './services/canary-judge.js';
import type { AgentRow } from './domain/agent.js';
import type { DeploymentRow } from './domain/deployment.js';
import { SYSTEM_CONTEXT } from './domain/audit.js';

export interface ControlDependencies {
  config: Config;
  db: Knex;
  redis: Redis;
  clock: Clock;
  logger: Logger;
  /** What runs the agents (orchestrator/create.ts; tests that run none pass an in-memory one). */
  driver: StartedDriver;
  /** Takes plan changes (POST /account/subscription); none by default, which answers 503. */
  billing?: BillingProvider;
  /** Told of every pass of every background loop: its outcome and how long it took. */
  onPass?: PassObserver;
  /** Told of every span POST /v1/traces refuses (the daily cap, the days kept). */
  onSpansDropped?: SpansDroppedObserver;
  /** Told of every stored span that could not be forwarded to OTEL_EXPORTER_OTLP_ENDPOINT. */
  onForwardDropped?: ForwardDroppedObserver;
}

export type Services = ReturnType<typeof buildServices>;

export interface Control {
  app: Koa;
  /** The agent services endpoint (sessions), served on a listener of its own: control/main.ts on AGENT_SERVICES_PORT. */
  agentServices: Koa;
  services: Services;
  /** Built, not started: control/main.ts starts them before it serves. */
  loops: BackgroundLoops;
  /** Fed by the app, the loops and the driver; control/main.ts serves it on CONTROL_METRICS_PORT. */
  metrics: ControlMetrics;
}

/** The loops that keep the platform in step without any API call, in the order they start. */
export interface BackgroundLoops {
  reconciler: Reconciler;
  /** Only where the platform scales auto-scaled agents itself (podman; Nomad has its Autoscaler). */
  autoscaler?: Autoscaler;
  /** Meters the replicas the driver reports. */
  meter: ReplicaMeter;
  flusher: UsageFlusher;
  /** On both drivers (the Nomad Autoscaler cannot see the edge): parks idle agents that scale to zero. */
  parker: IdleParker;
  /** Wakes parked agents when the edge asks. */
  wakes: WakeListener;
  /** Aborts or promotes running canaries by their figures (issue 36); in one copy at a time. */
  canaryJudge: CanaryJudge;
  /** Deletes agents' sessions past their time to live (issue 37); in one copy at a time. */
  sessionSweeper: SessionSweeper;
  /** Makes the trace tables' day partitions ahead and drops those past TRACE_RETENTION_DAYS (issue 38); in every copy. */
  tracePartitions: TracePartitionKeeper;
  /** Takes the edge's spans of invokes from Redis into the agents' traces (issue 38); in every copy. */
  edgeSpans: EdgeSpanIntake;
  housekeeping: Housekeeping;
  /** Delivers the webhook outbox; in every copy (claims keep each delivery to one). */
  webhooks: WebhookDispatcher;
  /** Verifies custom domains and orders and renews their certificates; in one copy at a time. */
  domains: DomainWorker;
  /** Resolves once the first reconcile (adopt what runs, restart what is missing) and the first metering pass are done. */
  start(): Promise<void>;
  /** Stops every loop, after a last flush of the edge's counts and a last measure of replica time; nothing if never started. */
  stop(): Promise<void>;
}

/** The composition root: every service gets its collaborators here, and only here. */
export function buildServices({ config, db, redis, clock, logger, driver, billing, onPass, onSpansDropped, onForwardDropped }: ControlDependencies) {
  const { orchestrator } = driver;
  const box = new SecretBox(config.masterKeys);
  const limiter = new FixedWindowLimiter(redis, clock);
  // A rebuild projects every active custom domain with its certificate, the key opened here.
  const listActiveDomains = async () =>
    (await repositoriesOn(db).domains.listActive()).map((domain) => ({
      slug: domain.slug, hostname: domain.hostname, chain: domain.certificate_pem, key: box.open(domain.private_key_sealed),
    }));
  const edge = new EdgeSync(db, new EdgeProjection(redis, config.redisKeyPrefix), orchestrator, logger.child({ component: 'edge-sync' }), listActiveDomains);
  const accessKeys = new AccessKeyService(db, clock, edge);
  const presenter = { agentUrl: config.agentUrl, runtimeImage: config.runtimeImage };
  const deployRules = { identityTokens: config.orchestrator !== 'nomad' };
  const jobSettings = { runtimeImage: config.runtimeImage, urlOf: (slug: string) => agentUrl(slug, config.agentUrl) };
  // Webhook events are written to the outbox by the transactions that cause them.
  const webhookEvents = new WebhookEvents(clock, presenter);
  const runner = new AgentRunner({
    db, orchestrator, box, jobSettings, clock, logger, edge, concurrency: config.orchestratorConcurrency, events: webhookEvents,
  });
  const recorder = new DeploymentRecorder(clock, config.deploymentHistoryLimit, webhookEvents);
  const replicaChanges = new ReplicaChanges({ clock, recorder, edge, runner });
  // Rollouts' progress: the driver's steps and every refresh of an agent reach the tracker; event streams wait on the notifier.
  const deploymentNotifier = new EventNotifier();
  const canaries = new CanaryService({ db, clock, edge, runner, notifier: deploymentNotifier, events: webhookEvents });
  // A canary whose replicas cannot start is aborted as failed, as the judge aborts one by its figures.
  const onCanaryFailed = async (agent: AgentRow, deployment: DeploymentRow, reason: string) => {
    await canaries.abort(agent.account_id, SYSTEM_CONTEXT, agent.id, deployment.id, { status: 'failed', reason }).catch((error: unknown) => {
      if (!(error instanceof PlatformError && error.code === 'NOT_A_RUNNING_CANARY')) throw error;
    });
  };
  const tracker = new DeploymentTracker(db, driver.clock, deploymentNotifier, logger.child({ component: 'deployment-tracker' }), webhookEvents, onCanaryFailed);
  // The hops that run by subscription, one event type each (services/agent-events.ts).
  subscribeReplicasChanged(orchestrator, runner);
  subscribeRolloutStepReported(orchestrator, tracker);
  subscribeAgentObserved(runner, tracker);
  // The edge stamps each second of figures by the wall clock, so they are read by it too.
  const figuresReader = new RequestFiguresReader(redis, systemClock);
  const observability = new ObservabilityService(db, orchestrator, clock, figuresReader);
  // Open streams re-check their tokens as requests are authenticated; `auth` is called only once a stream is open, after it is built.
  const streams: OpenStreams = new OpenStreams(redis, {
    accessLost: (principal) => auth.accessLost(principal),
    agentExists: (principal, agentId) => observability.exists(principal, agentId),
  }, logger.child({ component: 'open-streams' }));
  // Custom domains: the API takes them, the worker (a loop, in one copy) verifies and certifies them.
  const domainWorker = new DomainWorker({
    db, clock, box, edge, events: webhookEvents, logger: logger.child({ component: 'domains' }),
    txt: createTxtVerifier({ resolver: config.domains.dnsResolver }),
    acme: acmeClientSource(db, box, clock, config.domains),
    intervalMs: config.domains.checkIntervalMs,
  }, { exclusive: exclusivePass(db, LOOP_LOCKS.domains), onPass });
  const domains = new DomainService({
    db, clock, agentDomain: config.agentUrl.domain,
    edge: { removeDomain: (slug, hostname) => edge.write((projection) => projection.removeDomain(slug, hostname)) },
    kick: () => domainWorker.kick(),
  });
  const auth = new AuthService(db, clock, limiter, {
    registrationMode: config.registrationMode,
    sessionTtlMinutes: config.sessionTtlMinutes,
    loginRateLimitPerMinute: config.loginRateLimitPerMinute,
    registrationRateLimitPerHour: config.registrationRateLimitPerHour,
  }, streams);
  const agentTokens = new AgentTokens(config.masterKeys, config.agentServices.tokenTtlSeconds);
  // On Nomad, replicas present the workload identity Nomad signs for their task, checked against Nomad's keys.
  const nomadKeys = config.orchestrator === 'nomad' && config.nomad ? nomadIdentityKeys(config.nomad, clock, logger.child({ component: 'agent-services' })) : null;
  const { forwarding } = config.traces;
  const forwarder = forwarding ? new TraceForwarder(forwarding, logger.child({ component: 'trace-forwarder' }), onForwardDropped) : undefined;
  const nomadIdentities = nomadKeys && config.nomad
    ? { keys: (kid: string) => nomadKeys.keyFor(kid), namespace: config.nomad.namespace, allocationLive: nomadAllocationLiveness(config.nomad, logger.child({ component: 'agent-services' })) }
    : null;
  return {
    edge,
    runner,
    deployments: new DeploymentService({
      db, clock, box, presenter, recorder, edge, changes: replicaChanges, runner, events: webhookEvents, deployRules,
    }),
    /** What the autoscaler, the idle parker and the wake listener change. */
    platformScaling: new PlatformScaling(db, replicaChanges, runner, clock, orchestrator.warmParking),
    deploymentHistory: new DeploymentHistoryService(db, presenter, (agentId) => figuresReader.byVersion(agentId)),
    canaries,
    canaryFigures: (agentId: string) => figuresReader.byVersion(agentId),
    deploymentEvents: new DeploymentEventFeed(db, deploymentNotifier),
    observability,
    streams,
    limiter,
    auth,
    apiKeys: new ApiKeyService(db, clock, streams),
    accessKeys,
    agents: new AgentService({
      db, clock, box, accessKeys, presenter, runner, edge, recorder, events: webhookEvents, streams, deployRules,
    }),
    usage: new UsageService(db, redis, clock),
    subscriptions: new SubscriptionService(db, clock, edge, billing, logger.child({ component: 'subscriptions' })),
    webhooks: new WebhookService(db, clock, box, config.webhooks),
    accounts: new AccountService({ db, clock, edge, runner, logger: logger.child({ component: 'accounts' }), streams, events: webhookEvents }),
    invites: new InviteService({
      db, clock, auth, events: webhookEvents, ttlHours: config.invites.ttlHours, consoleUrl: config.publicApiUrl, logger: logger.child({ component: 'invites' }),
      mailer: config.invites.smtpUrl ? smtpInviteMailer({ url: config.invites.smtpUrl, from: config.invites.smtpFrom }) : undefined,
    }),
    auditEvents: new AuditEventService(db),
    domains,
    domainWorker,
    /** Mints and verifies replicas' agent services tokens; a driver hands each replica one (control/crypto/agent-token.ts). */
    agentTokens,
    /** Who a bearer token at the agent services speaks for: a platform token, or on Nomad a task's workload identity. */
    replicaCredentials: new ReplicaCredentials(agentTokens, clock, nomadIdentities),
    agentSessions: new AgentSessionService({ db, box, clock, limiter: new LeasedWindowLimiter(limiter), limits: config.agentServices.sessions }),
    sessionOwners: new SessionOwnerService(db, clock, box),
    traceIngest: new TraceIngest({ db, redis, clock, limiter, settings: config.traces, onDropped: onSpansDropped, forwarder }),
    invocations: new InvocationService(db),
    /** OpenID Connect sign-in per account (issue 39); the provider's answers are verified by openid-client. */
    sso: new SsoService({
      db, clock, box, auth, logger: logger.child({ component: 'sso' }), publicApiUrl: config.publicApiUrl, limiter, startsPerMinute: config.ssoStartRateLimitPerMinute,
      oidc: new OidcClient({ allowInsecureIssuers: config.ssoAllowInsecureIssuers, timeoutSeconds: 10 }),
    }),
  };
}

/** The background loops, wired as the services are; the platform-wide ones take their Postgres lock per pass. */
export function buildLoops({ config, db, redis, clock, logger, driver, onPass }: ControlDependencies, services: Services): BackgroundLoops {
  const loggerOf = (component: string) => logger.child({ component });
  const reconciler = new Reconciler(services.runner, services.edge, config.reconcileIntervalMs, loggerOf('reconciler'), {
    exclusive: exclusivePass(db, LOOP_LOCKS.reconciler), onPass,
  });
  const autoscaler = driver.autoscaledBy === 'platform'
    ? new Autoscaler(
      { db, redis, driver, scaling: services.platformScaling, clock, settings: config.autoscale, logger: loggerOf('autoscaler') },
      { exclusive: exclusivePass(db, LOOP_LOCKS.autoscaler), onPass },
    )
    : undefined;
  // Replica time is the driver's: its clock says when a replica was seen running.
  const meter = new ReplicaMeter(db, driver.orchestrator, driver.clock, config.usageMeterIntervalMs, loggerOf('replica-meter'), { onPass });
  const flusher = new UsageFlusher(db, redis, clock, config.usageFlushIntervalMs, loggerOf('usage-flusher'), { onPass });
  const housekeeping = new Housekeeping(db, clock, loggerOf('housekeeping'), { onPass, auditRetentionDays: config.auditRetentionDays });
  // The edge stamps request figures by the wall clock, so idleness is measured by it too.
  const parker = new IdleParker(db, redis, services.platformScaling, systemClock, config.autoscale.intervalMs, loggerOf('idle-parker'), {
    exclusive: exclusivePass(db, LOOP_LOCKS.idleParker), onPass,
  });
  const { webhooks: hooks } = config;
  const webhooks = new WebhookDispatcher(db, new SecretBox(config.masterKeys), new WebhookSender(hooks), {
    batchSize: 10,
    pollIntervalMs: hooks.pollIntervalMs,
    retry: { baseMs: hooks.retryBaseMs, maxMs: hooks.retryMaxMs, windowMs: hooks.retryWindowMs },
    timeoutMs: hooks.timeoutMs,
  }, loggerOf('webhooks'));
  const wakes = new WakeListener(redis, services.platformScaling, services.edge, loggerOf('wake-listener'));
  // The edge stamps request figures by the wall clock, so a canary's age is measured by it too.
  const canaryJudge = new CanaryJudge(db, services.canaries, services.canaryFigures, systemClock, config.canaryJudgeIntervalMs, loggerOf('canary-judge'), {
    exclusive: exclusivePass(db, LOOP_LOCKS.canaryJudge), onPass,
  });
  const sessionSweeper = new SessionSweeper(db, clock, loggerOf('session-sweeper'), { exclusive: exclusivePass(db, LOOP_LOCKS.sessionSweeper), onPass });
  const tracePartitions = new TracePartitionKeeper(db, clock, config.traces.retentionDays, loggerOf('trace-partitions'), { onPass });
  const edgeSpans = new EdgeSpanIntake(redis, services.traceIngest, loggerOf('edge-spans'), { onPass });
  let started = false;
  return {
    reconciler,
    autoscaler,
    meter,
    flusher,
    housekeeping,
    parker,
    wakes,
    webhooks,
    canaryJudge,
    sessionSweeper,
    tracePartitions,
    edgeSpans,
    domains: services.domainWorker,
    async start() {
      started = true;
      await reconciler.start();
      autoscaler?.start();
      parker.start();
      canaryJudge.start();
      wakes.start();
      await meter.start();
      flusher.start();
      housekeeping.start();
      sessionSweeper.start();
      await tracePartitions.start();
      edgeSpans.start();
      webhooks.start();
      services.domainWorker.start();
    },
    async stop() {
      if (!started) return;
      started = false;
      await wakes.stop();
      await parker.stop();
      await canaryJudge.stop();
      await autoscaler?.stop();
      await reconciler.stop();
      // The last counts of the edge reach Postgres, and replica time is measured once more.
      await flusher.stop();
      await meter.stop();
      await housekeeping.stop();
      await sessionSweeper.stop();
      await tracePartitions.stop();
      await edgeSpans.stop();
      await webhooks.stop();
      await services.domainWorker.stop();
    },
  };
}

export function buildControl(given: ControlDependencies): Control {
  // One check for GET /readyz and for the metrics' agent_platform_control_dependency_up.
  const checkReadiness = readinessCheck(
    { postgres: () => pingDatabase(given.db), redis: () => given.redis.ping() },
    READINESS_TIMEOUT_MS,
    given.logger.child({ component: 'readiness' }),
  );
  const repositories = repositoriesOn(given.db);
  const metrics = createControlMetrics({
    countAgentsByStatus: () => repositories.agents.countByStatus(),
    checkReadiness,
    certificateExpiries: () => repositories.domains.certificateExpiries(),
    webhookBacklog: () => repositories.webhookOutbox.backlog(),
  });
  const deps = withMetrics(given, metrics);
  const services = buildServices(deps);
  subscribeReconcilePassed(services.runner, metrics);
  const routes = [
    ...authRoutes(services.auth),
    ...ssoRoutes(services.sso),
    ...apiKeyRoutes(services.apiKeys),
    ...agentRoutes(services.agents),
    ...lifecycleRoutes(services.deployments),
    ...deploymentRoutes(services.deploymentHistory, services.deployments, services.canaries),
    ...deploymentEventRoutes(services.deploymentHistory, services.deploymentEvents, services.streams),
    ...observabilityRoutes(services.observability, services.streams),
    ...accessKeyRoutes(services.accessKeys),
    ...accountRoutes(services.usage, services.subscriptions),
    ...accountUserRoutes(services.accounts),
    ...accountInviteRoutes(services.invites),
    ...auditEventRoutes(services.auditEvents),
    ...webhookRoutes(services.webhooks),
    ...domainRoutes(services.domains),
    ...agentSessionRoutes(services.sessionOwners),
    ...invocationRoutes(services.invocations),
    versionRoute(),
  ];
  const api = apiDocument(routes, documentServerUrl(deps.config.publicApiUrl));
  const app = createApp({
    routes: [...routes, api.route],
    reference: api.document,
    authenticate: bearerAuthenticator(services.auth, services.limiter, { perMinute: deps.config.tokenRateLimitPerMinute, timeoutMs: deps.config.tokenRateLimitTimeoutMs }, deps.logger),
    checkReadiness,
    logger: deps.logger,
    trustProxy: deps.config.trustProxy,
    onRequest: metrics.onRequest,
    console: { root: CONSOLE_BUILD_DIR, edgeOrigin: agentUrl('*', deps.config.agentUrl) },
  });
  const agentServices = createAgentServicesApp({
    sessions: services.agentSessions,
    traces: services.traceIngest,
    verifyToken: (token) => services.replicaCredentials.verify(token),
    maxSessionBytes: deps.config.agentServices.sessions.maxBytes,
    logger: deps.logger,
    onRequest: metrics.onRequest,
  });
  return { app, agentServices, services, loops: buildLoops(deps, services), metrics };
}

/** The same dependencies with every loop pass and every driver call reported to `metrics` as well. */
function withMetrics(deps: ControlDependencies, metrics: ControlMetrics): ControlDependencies {
  const { driver, onPass, onSpansDropped, onForwardDropped } = deps;
  return {
    ...deps,
    driver: { ...driver, orchestrator: instrumentOrchestrator(driver.orchestrator, metrics.onOrchestratorCall) },
    onPass: (pass) => {
      metrics.onPass(pass);
      onPass?.(pass);
    },
    onSpansDropped: (reason, count) => {
      metrics.onSpansDropped(reason, count);
      onSpansDropped?.(reason, count);
    },
    onForwardDropped: (reason, count) => {
      metrics.onForwardDropped(reason, count);
      onForwardDropped?.(reason, count);
    },
  };
}
