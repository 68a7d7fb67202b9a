# authz (authz/main.ts), Envoy's ext_authz gRPC service, as a Nomad service job with
# several stateless copies. Envoy (envoy.nomad.hcl) finds them through the Consul
# service "authz". See docs/nomad.md.
#
#   nomad job run -var 'image=registry.example.com/agent-platform:1.0.0' nomad-jobs/authz.nomad.hcl
#
# The image is the platform image (Containerfile, built by scripts/build-platform-image.sh),
# the same one control.nomad.hcl runs; the command picks authz.
#
# Before the first run, write the Variable nomad/jobs/platform-authz (namespace
# "platform") with REDIS_URL: the template below blocks until it exists.

variable "image" {
  type        = string
  default     = "localhost/agent-platform:latest"
  description = "The platform image (scripts/build-platform-image.sh), at a name every platform node's Docker can pull or already holds."
}

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

variable "agent_domain" {
  type    = string
  default = "agents.example.com"
}

variable "wake_timeout_seconds" {
  type        = number
  default     = 30
  description = "How long a request to a parked agent waits for it to start (1 to 30: below the edge's 35 s ext_authz timeout in envoy.nomad.hcl)."
}

job "platform-authz" {
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

  group "authz" {
    # Every edge request is one Check; authz keeps no state (Redis holds it all), so any
    # copy answers any Check. Three survive losing a node during a rolling update.
    count = 3

    # Copies on different nodes, so one node going away takes one copy.
    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    network {
      port "grpc" {
        to = 7091
      }
      port "metrics" {
        to = 7092
      }
    }

    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "10s"
      healthy_deadline  = "2m"
      progress_deadline = "10m"
      auto_revert       = true
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "5s"
      mode     = "delay"
    }

    # Consul marks the copy gone and Envoy's template drops it before SIGTERM.
    shutdown_delay = "5s"

    service {
      name     = "authz"
      provider = "consul"
      port     = "grpc"
      tags     = ["platform", "grpc"]

      # Readiness: grpc.health.v1.Health/Check for the Authorization service
      # (authz/health.ts registers exactly this name): SERVING only while Redis answers
      # within AUTHZ_REDIS_TIMEOUT_MS, so Envoy's template drops a copy cut off from Redis.
      # No check_restart: a restart cannot bring Redis back.
      check {
        name         = "authz gRPC health"
        type         = "grpc"
        grpc_service = "envoy.service.auth.v3.Authorization"
        grpc_use_tls = false
        interval     = "5s"
        timeout      = "1s"
      }
    }

    # Prometheus scrapes GET /metrics here; the port also serves the probes (authz/ops-server.ts).
    service {
      name     = "authz-metrics"
      provider = "consul"
      port     = "metrics"
      tags     = ["platform", "prometheus"]

      meta {
        metrics_path = "/metrics"
      }

      # Liveness: GET /livez never asks Redis; it fails only when the process cannot
      # answer at all (a wedged event loop), which a restart does cure.
      check {
        name     = "authz live"
        type     = "http"
        path     = "/livez"
        interval = "10s"
        timeout  = "2s"

        check_restart {
          limit = 3
          grace = "30s"
        }
      }
    }

    task "authz" {
      driver = "docker"

      config {
        image        = var.image
        ports        = ["grpc", "metrics"]
        command      = "node"
        args         = ["dist/authz/main.js"]
        init         = true
        pids_limit   = 512
        cap_drop     = ["ALL"]
        security_opt = ["no-new-privileges"]
      }

      env {
        # Inside the container: the published ports reach it through Docker's bridge.
        AUTHZ_HOST             = "0.0.0.0"
        AUTHZ_GRPC_PORT        = "7091"
        AUTHZ_METRICS_PORT     = "7092"
        AGENT_DOMAIN           = var.agent_domain
        AUTHZ_REDIS_TIMEOUT_MS = "100"
        WAKE_TIMEOUT_SECONDS   = var.wake_timeout_seconds
        # One process per copy: resources below reserve one core, and a container sees the
        # host's cores (os.availableParallelism ignores Docker's CPU share). Scale with
        # count, or raise cpu (and memory) with the workers.
        AUTHZ_WORKERS          = "1"
      }

      # `.KEY.Value | toJSON` marshals the plain string (json.Marshal: \u0026, \n, \u0001…),
      # which go-envparse reads back exactly. `.KEY | toJSON` would go through
      # NomadVarItem.MarshalJSON, Go's %q, whose \x01, \a, \v and \x7f are not JSON: the
      # render fails (test/nomad-env-template.test.ts).
      template {
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/platform-authz" -}}
          REDIS_URL={{ .REDIS_URL.Value | toJSON }}
          {{- end }}
        EOT
        destination = "secrets/authz.env"
        env         = true
        change_mode = "restart"
      }

      resources {
        cpu    = 1000
        memory = 256
      }

      kill_timeout = "10s"
    }
  }
}
