/**
 * The import rules of the platform, checked by test/architecture.test.ts
 * (dependency-cruiser reads the real import graph, type-only imports included).
 * docs/architecture.md draws the layers these rules keep apart.
 */

/** Forbids `from` (a path regex) importing anything matching `to`, with the reason. */
const never = (name, comment, from, to, extra = {}) => ({ name, comment, severity: 'error', from: { path: from }, to: { path: to, ...extra } });

/** The control API's layers, lowest first: a layer may import its own and lower layers only. */
const CONTROL_LAYERS = [
  { name: 'domain', path: '^control/domain/' },
  // Postgres and Redis: their clients, what an outage of either means, and the SQL behind repositories.
  { name: 'storage', path: '^control/(db|repositories)/' },
  { name: 'orchestrator', path: '^control/orchestrator/' },
  { name: 'edge projection', path: '^control/edge/' },
  // The API's request and response shapes: what services take and http validates.
  { name: 'schemas', path: '^control/schemas/' },
  { name: 'services', path: '^control/(services|billing)/' },
  { name: 'http', path: '^control/http/' },
  // Prometheus families fed by the observers the layers below offer; prom-client stays out of those layers.
  { name: 'metrics', path: '^control/metrics/' },
  // The entry points (main.ts, admin.ts), the root that wires the API (compose.ts) and the admin commands.
  { name: 'composition', path: '^control/((compose|main|admin)\\.ts$|admin/)' },
];

/**
 * Lower layers importing higher ones, except what the lower layer may know of a higher
 * one: the orchestrator's port (types.ts: JobSpec, JobStatus), which the domain maps to
 * and from, and the driver factory, which alone of the orchestrator reads the settings.
 */
const upwardImports = CONTROL_LAYERS.flatMap((lower, index) =>
  CONTROL_LAYERS.slice(index + 1).map((higher) =>
    never(
      `no-${lower.name.replace(' ', '-')}-to-${higher.name.replace(' ', '-')}`,
      `${lower.name} is below ${higher.name}: it must not depend on it`,
      lower.path,
      higher.path,
      higher.name === 'orchestrator' ? { pathNot: '^control/orchestrator/types\\.ts$' } : {},
    ),
  ),
);

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'Import cycles make start-up order and testing in isolation fragile', severity: 'error', from: {}, to: { circular: true } },
    never('contract-imports-nothing-of-ours', 'contract/ is what control and authz agree on: it depends on neither', '^contract/', '^(control|authz|envoy|proto|scripts|bench|test|runtime-image)/'),
    never('authz-only-through-the-contract', 'authz shares only contract/ with the control API', '^authz/', '^(control|envoy)/'),
    never('control-only-through-the-contract', 'the control API shares only contract/ with authz', '^control/', '^(authz|envoy)/'),
    // The local edge serves with the control API's slow-client and per-address limits: one implementation of that protection.
    never('local-edge-apart', 'the local edge talks to authz over gRPC, like Envoy', '^envoy/', '^(authz|control)/', { pathNot: '^control/http/client-limits\\.ts$' }),
    // agentctl speaks to the platform over HTTP only; the API's shapes it names as types, never runs their code.
    never('cli-over-http-only', 'cli/ imports only cli/, contract/ and (type-only) control/schemas/', '^cli/', '^(control|authz|envoy|proto|scripts|bench|test|runtime-image)/', { pathNot: '^control/schemas/' }),
    never('cli-schema-types-only', 'cli/ names the API schemas as types only (import type)', '^cli/', '^control/schemas/', { dependencyTypesNot: ['type-only'] }),
    never('nothing-imports-the-cli', 'agentctl is a client of the platform: nothing of the platform depends on it', '^(contract|control|authz|envoy|proto|scripts|bench|runtime-image)/', '^cli/'),
    // The web console runs in the browser and speaks to the platform over HTTP only, like agentctl.
    never('console-over-http-only', 'console/ imports only console/ and (type-only) control/schemas/', '^console/', '^(contract|control|authz|envoy|proto|scripts|bench|test|runtime-image|cli)/', { pathNot: '^control/schemas/' }),
    never('console-schema-types-only', 'console/ names the API schemas as types only (import type)', '^console/', '^control/schemas/', { dependencyTypesNot: ['type-only'] }),
    never('nothing-imports-the-console', 'the console is a client of the platform, served as built files: nothing of ours imports it', '^(contract|control|authz|envoy|proto|scripts|bench|test|runtime-image|cli)/', '^console/'),
    // A clock that stands still is for tests: the platform takes a Clock and runs on systemClock. bench/ has no use for it either.
    { name: 'manual-clock-in-tests-only', comment: 'nothing outside test/ imports ManualClock (test/support/manual-clock.ts)', severity: 'error', from: { pathNot: '^test/' }, to: { path: '^test/support/manual-clock\\.ts$' } },
    never('runtime-is-its-own-package', 'runtime-image/ is built and shipped on its own', '^runtime-image/', '^(contract|control|authz|envoy|proto|scripts|bench|test)/'),
    never('drivers-apart-nomad', 'what both drivers share lives in control/orchestrator/', '^control/orchestrator/nomad/', '^control/orchestrator/podman/'),
    never('drivers-apart-podman', 'what both drivers share lives in control/orchestrator/', '^control/orchestrator/podman/', '^control/orchestrator/nomad/'),
    // Storage and transport are above the domain (the layer rules); the settings and the logger sit outside the layers.
    never('domain-is-pure', 'the domain knows no storage, transport or settings', '^control/domain/', '^control/config/'),
    never('drivers-take-their-settings', 'drivers get their settings passed in; control/config/config.ts composes them', '^control/orchestrator/(nomad|podman)/', '^control/config/'),
    never('services-take-settings-types-only', 'services get settings passed in: they may name their types, not read them', '^control/(services|repositories|domain|schemas|http)/', '^control/config/', { dependencyTypesNot: ['type-only'] }),
    ...upwardImports,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.json'] },
  },
};
