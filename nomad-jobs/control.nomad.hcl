# The control API (control/main.ts) as a Nomad service job. See docs/nomad.md.
#
#   nomad job run \
#     -var 'image=registry.example.com/platform/agent-platform:1.0.0-3f2c1ab' \
#     -var 'runtime_image=registry.example.com/platform/agent-runtime:1.0.0-3f2c1ab' \
#     nomad-jobs/control.nomad.hcl
#
# The image is the platform image (Containerfile): compiled JavaScript, one image for control
# and authz, the command picking the program. Both images are named by the references
# `npm run images -- push <registry>/<namespace>` prints: an immutable tag or a digest, never
# "latest", which Nomad's docker driver pulls at every start instead of using the node's copy
# (docs/nomad.md, "Images").
#
# Before the first run, write the Variable nomad/jobs/platform-control (namespace
# "platform") with DATABASE_URL, REDIS_URL, MASTER_KEYS, NOMAD_TOKEN and CONSUL_HTTP_TOKEN:
# the template below blocks until it exists. Secrets never sit in the job's env, where
# anyone who can read the job would see them.

variable "image" {
  type        = string
  description = "The platform image, by an immutable tag or digest every platform node's Docker can pull (npm run images -- push prints it)."
}

variable "runtime_image" {
  type        = string
  description = "The image of agents that name none (RUNTIME_IMAGE), by an immutable tag or digest every agent node's Docker can pull: the control API refuses an untagged or \"latest\" one."
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

variable "agents_namespace" {
  type        = string
  default     = "agents"
  description = "The Nomad namespace the control API submits agent jobs to (the ACL policy in control-acl-policy.hcl names it)."
}

variable "agent_services_url" {
  type        = string
  default     = ""
  description = "Where agent nodes reach the agent services (NOMAD_AGENT_SERVICES_URL), e.g. http://10.0.1.5:7090: an address in front of the copies' agent_services port (a load balancer or a virtual IP), the one address and port agent-client-firewall.sh lets agents reach (AGENT_SERVICES_ADDRESS). Empty: agents keep conversations in memory."
}

variable "agent_domain" {
  type    = string
  default = "agents.example.com"
}

job "platform-control" {
  # The platform's own jobs live apart from the agents' jobs: the control API's token has
  # no capability here, and agents' workload identities see nothing of this namespace.
  namespace   = "platform"
  type        = "service"
  datacenters = var.datacenters

  # Platform nodes only (client { node_class = "platform" }). Agent nodes run
  # agent-client-firewall.sh, which refuses private addresses to everything on the docker
  # bridge: control and authz there could not reach Postgres or Redis either.
  constraint {
    attribute = "${node.class}"
    value     = "platform"
  }

  group "control" {
    # Two copies, so the API stays up while one is rescheduled. The HTTP API is stateless;
    # the reconciler and autoscaler take a Postgres advisory lock per pass
    # (control/services/exclusive-pass.ts), so only one copy acts on the orchestrator at a time.
    count = 2

    # Host networking (the task's network_mode below): a Consul agent's HTTP API listens
    # on 127.0.0.1 unless its client_addr says otherwise, and a docker bridge cannot reach
    # the node's loopback. The control API listens on this dynamic port of the node.
    network {
      port "http" {}
      # Prometheus metrics (GET /metrics), on the same address as the API.
      port "metrics" {}
      # The agent services (sessions), the one listener agents may call: a fixed port, so
      # the agent nodes' firewall can let exactly it through (docs/nomad.md, "Agent services").
      port "agent_services" {
        static = 7090
      }
    }

    # Rolling, one copy at a time, health-gated: the other copy serves meanwhile.
    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "10s"
      healthy_deadline  = "3m"
      progress_deadline = "10m"
      auto_revert       = true
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "delay"
    }

    # Consul drops the instance from service discovery before the task gets SIGTERM, and
    # control/main.ts finishes in-flight requests within 10 s of it.
    shutdown_delay = "5s"

    service {
      name     = "platform-control"
      provider = "consul"
      port     = "http"
      tags     = ["platform", "control-api"]

      # Readiness: GET /readyz answers 200 only while Postgres and Redis both answer, so
      # Consul routes to this copy only then. No check_restart: a restart cannot bring
      # Postgres back, and during its outage it would restart every copy at once.
      check {
        name     = "control API ready"
        type     = "http"
        path     = "/readyz"
        interval = "10s"
        timeout  = "2s"
      }

      # Liveness: GET /livez never waits on Postgres or Redis; it fails only when the
      # process cannot answer at all (a wedged event loop), which a restart does cure.
      # The grace covers migrations and the first reconcile, which run before listening.
      check {
        name     = "control API live"
        type     = "http"
        path     = "/livez"
        interval = "10s"
        timeout  = "2s"

        check_restart {
          limit = 3
          grace = "60s"
        }
      }
    }

    # For a Prometheus consul_sd_configs job: services tagged "prometheus", scraped at the
    # path in their metrics_path meta (docs/operations/metrics.md has the scrape config).
    # No check of its own: the API's /livez above restarts a wedged process.
    service {
      name     = "platform-control-metrics"
      provider = "consul"
      port     = "metrics"
      tags     = ["platform", "prometheus"]

      meta {
        metrics_path = "/metrics"
      }
    }

    task "control" {
      driver = "docker"

      config {
        image      = var.image
        network_mode = "host"
        command    = "node"
        args       = ["dist/control/main.js"]
        init       = true
        pids_limit = 512
        cap_drop   = ["ALL"]
        security_opt = ["no-new-privileges"]
      }

      # Only settings that are not secret. Nomad sets NOMAD_NAMESPACE and NOMAD_REGION
      # in every task to the task's own job (here "platform"), so the agents' namespace
      # is set explicitly.
      env {
        ORCHESTRATOR     = "nomad"
        CONTROL_HOST     = "${NOMAD_IP_http}"
        CONTROL_PORT     = "${NOMAD_PORT_http}"
        CONTROL_METRICS_PORT = "${NOMAD_PORT_metrics}"
        AGENT_SERVICES_HOST  = "${NOMAD_IP_agent_services}"
        AGENT_SERVICES_PORT  = "${NOMAD_PORT_agent_services}"
        # Replicas authenticate with their task's workload identity, checked against
        # NOMAD_ADDR's /.well-known/jwks.json.
        NOMAD_AGENT_SERVICES_URL = var.agent_services_url
        # The node's own agents, on loopback: Nomad's and Consul's defaults. The control API
        # checks at start that Consul answers here and logs how to fix it if not.
        NOMAD_ADDR       = "http://127.0.0.1:4646"
        NOMAD_NAMESPACE  = var.agents_namespace
        CONSUL_HTTP_ADDR = "http://127.0.0.1:8500"
        AGENT_DOMAIN     = var.agent_domain
        RUNTIME_IMAGE    = var.runtime_image
        # Agent URLs as callers use them: https://<slug>.<agent domain>, no port (443, which
        # the load balancer maps to the edge's TLS listener on 7443: docs/nomad.md, "HTTPS").
        AGENT_URL_SCHEME = "https"
        AGENT_URL_PORT   = "none"
        LOG_LEVEL        = "info"
      }

      # Secrets from the Variable this job's workload identity may read (its own path),
      # written to secrets/ (never in the image, never in the job) and read as env.
      # `.KEY.Value | toJSON` marshals the plain string (json.Marshal: \u0026, \n, \u0001…),
      # which go-envparse reads back exactly. `.KEY | toJSON` would go through
      # NomadVarItem.MarshalJSON, Go's %q, whose \x01, \a, \v and \x7f are not JSON: the
      # render fails (test/nomad-env-template.test.ts).
      template {
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/platform-control" -}}
          DATABASE_URL={{ .DATABASE_URL.Value | toJSON }}
          REDIS_URL={{ .REDIS_URL.Value | toJSON }}
          MASTER_KEYS={{ .MASTER_KEYS.Value | toJSON }}
          NOMAD_TOKEN={{ .NOMAD_TOKEN.Value | toJSON }}
          CONSUL_HTTP_TOKEN={{ .CONSUL_HTTP_TOKEN.Value | toJSON }}
          {{- end }}
        EOT
        destination = "secrets/control.env"
        env         = true
        # A rotated token or password takes effect by restarting the task.
        change_mode = "restart"
      }

      resources {
        cpu    = 500
        memory = 512
      }

      kill_timeout = "15s"
    }
  }
}
