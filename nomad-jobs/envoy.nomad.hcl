# Envoy, the agent edge, and authz, its ext_authz service, as a Nomad system job: on every
# edge node one Envoy and, beside it, one authz. See docs/nomad.md ("The edge group") and
# envoy/README.md.
#
#   nomad job run -var 'image=registry.example.com/platform/agent-platform:1.0.0-3f2c1ab' \
#     -var 'envoy_image=envoyproxy/envoy:v1.34.1' \
#     -var console_origin=https://platform.example.com nomad-jobs/envoy.nomad.hcl
#
# authz is Envoy's sidecar: a task of the same group that serves Checks and the access-log
# stream on a Unix socket in the allocation's shared directory, where Envoy's cluster authz
# points (docs/decisions.md, "authz is Envoy's sidecar on a Unix socket"). No port or Consul
# service couples them: authz's gRPC is off the network, and its health never re-renders or
# restarts Envoy (the files authz's task renders for both, below, render once). authz runs from the platform image (Containerfile), the one
# control.nomad.hcl runs; the command picks authz. Both images are named by an immutable tag
# or a digest, never "latest" (docs/nomad.md, "Images").
#
# Envoy's HTTPS listener comes from authz by LDS, over ADS on a second socket beside the
# first (envoy.yaml, dynamic_resources): authz builds it from envoy/tls-listener.yaml and the
# plain listener of the very envoy.yaml Envoy runs, with a filter chain per custom domain.
# So authz renders both files, into the allocation's shared directory, where Envoy reads its
# bootstrap too: authz's first template IS envoy/envoy.yaml, except the sockets' paths (in the
# allocation's directory) and the console's origin; its second IS envoy/tls-listener.yaml,
# except the listener's port (7443) and where its certificate is (the Envoy task's secrets
# directory). test/nomad-jobs-hcl.test.ts and test/nomad-edge-tls.test.ts render them and
# compare them with envoy/, so a change to one that is not made to the other fails the tests.
#
# Before the first run, write two Variables (namespace "platform"; docs/nomad.md, "The
# platform's Variables"): nomad/jobs/platform-edge/edge/authz with REDIS_URL, and
# nomad/jobs/platform-edge/edge/envoy with tls_crt and tls_key, the agent domain's
# certificate. Each task's templates block until its own exists. Each task reads its own
# alone: a workload identity reads nomad/jobs/<job>/<group>/<its own task> without any
# policy (acl/acl.go, `matchingVariablesCapabilitySet`), not another task's path.

variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

# The web console's origin, scheme://host[:port] as the browser sends it in Origin: the
# address users open the control API at (e.g. https://platform.example.com). The edge
# answers CORS preflights from it and from no other origin, so "Try it" can call agents
# (envoy.yaml's CorsPolicy, docs/console.md).
variable "console_origin" {
  type = string
  validation {
    # Nomad's functions have no regex (jobspec2/functions.go): a whole match replaced by "" leaves "".
    condition     = var.console_origin != "" && regex_replace(var.console_origin, "^https?://[^/]+$", "") == ""
    error_message = "The console origin is scheme://host[:port], without a path or trailing slash, e.g. https://platform.example.com."
  }
}

variable "envoy_image" {
  type        = string
  description = "Envoy 1.27 or later (original_dst_lb_config.metadata_key), by a release tag (vX.Y.Z) or a digest: a stable branch's vX.Y-latest moves, and each node keeps whichever copy it pulled first."
}

variable "image" {
  type        = string
  description = "The platform image authz runs from, by an immutable tag or digest every edge node's Docker can pull (npm run images -- push prints it)."
}

variable "agent_domain" {
  type    = string
  default = "agents.example.com"
}

variable "wake_timeout_seconds" {
  type        = number
  default     = 30
  description = "How long a request to a parked agent waits for it to start (1 to 30: below the edge's 35 s ext_authz timeout in envoy.yaml)."
}

# EDGE_HTTP_REDIRECT: answer plain-HTTP requests 308 to https (except ACME HTTP-01
# challenges). Adds to Envoy's arguments the runtime layer that turns envoy.yaml's redirect
# route on, the one `npm run up` passes (scripts/lib/up-edge-tls.ts, envoyRedirectArgs).
variable "edge_http_redirect" {
  type        = bool
  default     = false
  description = "Answer plain-HTTP requests on 7080 with 308 to https://<host>:443 (ACME challenges excepted)."
}

variable "authz_workers" {
  type        = number
  default     = 2
  description = "authz's processes on each edge node (AUTHZ_WORKERS), one per core its task reserves: raise cpu and memory with it."
}

job "platform-edge" {
  namespace   = "platform"
  type        = "system"
  datacenters = var.datacenters

  # Edge nodes are the Nomad clients whose agent configuration says node_class = "edge"
  # (client { node_class = "edge" }): the ones a load balancer or public address sends
  # agent URLs to. Nothing else runs Envoy, and agents never land there by this job. Their
  # authz reaches Redis from them (docs/nomad.md, "Before you start").
  constraint {
    attribute = "${node.class}"
    value     = "edge"
  }

  group "edge" {
    network {
      # Envoy listens on the host's 0.0.0.0:7080 (network_mode "host" below); reserving the
      # port keeps Nomad from placing anything else on it.
      port "edge" {
        static = 7080
      }
      # Envoy's TLS listener (agent_edge_tls, which authz serves it), on the host's
      # 0.0.0.0:7443: a load balancer, or the node's own port forward, maps 443 to it, and
      # 443 stays the port callers use (the redirect's port_redirect). Not 443 itself: binding a port below 1024 takes
      # CAP_NET_BIND_SERVICE, which Envoy, as uid 101, cannot get from the docker driver.
      # cap_add puts a capability in the container's bounding, permitted and effective
      # sets (moby daemon/oci_linux.go, `WithCapabilities`; containerd pkg/oci/spec_opts.go,
      # `WithCapabilities`) but never the ambient set, so a non-root process loses it at
      # execve (capabilities(7)) unless the executable carries a file capability: an Envoy
      # image of our own, for one port. Docker opens low ports to every user
      # (net.ipv4.ip_unprivileged_port_start=0) only in a network namespace of the
      # container's own, never on the host's network (daemon/oci_linux.go,
      # `withCommonOptions`, under `NetworkMode.IsPrivate()`).
      port "edge_tls" {
        static = 7443
      }
      # Envoy's stats for Prometheus: envoy.yaml's prometheus_stats listener, which passes
      # GET /stats/prometheus to the admin listener (127.0.0.1:9901) and nothing else.
      port "stats" {
        static = 9902
      }
      # authz's metrics and probes (authz/ops-server.ts), its container's 7092. authz's gRPC
      # has no port: it is the Unix socket in the allocation's directory.
      port "authz_metrics" {
        to = 7092
      }
    }

    # One edge node at a time, 30 s apart, so the load balancer always has the others.
    # Only these two: before system-job deployments (recent Nomad releases), a system job's
    # update block used max_parallel and stagger and nothing else.
    update {
      max_parallel = 1
      stagger      = "30s"
    }

    restart {
      attempts = 5
      interval = "5m"
      delay    = "5s"
      mode     = "delay"
    }

    # The load balancer's health checks (TCP 7080 and 7443) see the node go before Envoy stops.
    shutdown_delay = "10s"

    service {
      name     = "platform-edge"
      provider = "consul"
      port     = "edge"
      tags     = ["platform", "edge"]

      check {
        name     = "edge listener"
        type     = "tcp"
        interval = "10s"
        timeout  = "2s"
      }
    }

    # The TLS listener, for a load balancer that finds edge nodes in Consul. A TCP check, as
    # the plain one: an HTTP check would need an agent's hostname to get anything but 404.
    service {
      name     = "platform-edge-tls"
      provider = "consul"
      port     = "edge_tls"
      tags     = ["platform", "edge", "tls"]

      check {
        name     = "edge TLS listener"
        type     = "tcp"
        interval = "10s"
        timeout  = "2s"
      }
    }

    # For a Prometheus consul_sd_configs job: services tagged "prometheus", scraped at the
    # path in their metrics_path meta (docs/operations/metrics.md has the scrape config).
    service {
      name     = "platform-edge-metrics"
      provider = "consul"
      port     = "stats"
      tags     = ["platform", "prometheus"]

      meta {
        metrics_path = "/stats/prometheus"
      }

      check {
        name     = "edge stats listener"
        type     = "tcp"
        interval = "30s"
        timeout  = "2s"
      }
    }

    # Prometheus scrapes authz's GET /metrics here. A service for Prometheus and for the
    # liveness check only: nothing routes to authz through Consul.
    service {
      name     = "authz-metrics"
      provider = "consul"
      port     = "authz_metrics"
      tags     = ["platform", "prometheus"]

      meta {
        metrics_path = "/metrics"
      }

      # Liveness: GET /livez never asks Redis; it fails only when the process cannot
      # answer at all (a wedged event loop), which a restart does cure. No readiness check
      # restarts anything: a restart cannot bring Redis back.
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

    # Envoy's sidecar. A prestart sidecar starts before Envoy and runs beside it: Nomad
    # starts the main tasks once every prestart sidecar is running
    # (client/allocrunner/tasklifecycle/coordinator.go, `isPrestartDone`), and stops
    # sidecars after the other tasks (client/allocrunner/alloc_runner.go, `killTasks`:
    # "Kill the sidecar tasks last"), so Envoy's last Checks still find authz. Should authz
    # crash, Nomad restarts it alone (the restart block above) while Envoy answers 503s,
    # failing closed.
    task "authz" {
      driver = "docker"

      lifecycle {
        hook    = "prestart"
        sidecar = true
      }

      config {
        image        = var.image
        ports        = ["authz_metrics"]
        command      = "node"
        args         = ["dist/authz/main.js"]
        init         = true
        pids_limit   = 512
        cap_drop     = ["ALL"]
        security_opt = ["no-new-privileges"]
      }

      env {
        # The allocation's shared directory, /alloc in every docker task of the group
        # (client/allocrunner/taskrunner/task_dir_hook.go, `setEnvvars`; drivers/docker/
        # driver.go binds it), under tmp/, which Nomad makes writable by every task's user
        # (client/allocdir/alloc_dir.go, `Build`) and where it puts its own Consul sockets
        # (`AllocGRPCSocket`). authz opens the socket to Envoy's user (authz/unix-socket.ts).
        AUTHZ_GRPC_SOCKET           = "${NOMAD_ALLOC_DIR}/tmp/authz.sock"
        # Envoy's HTTPS listener and custom domains' certificates (ADS), on a socket of its
        # own beside the first; envoy.yaml's cluster authz_xds names it. authz reads the two
        # files its templates below render, at start.
        AUTHZ_XDS_SOCKET            = "${NOMAD_ALLOC_DIR}/tmp/authz-xds.sock"
        AUTHZ_XDS_ENVOY_CONFIG_FILE = "${NOMAD_ALLOC_DIR}/envoy/envoy.yaml"
        AUTHZ_XDS_TLS_LISTENER_FILE = "${NOMAD_ALLOC_DIR}/envoy/tls-listener.yaml"
        # Metrics and probes only, inside the container: the published port reaches it
        # through Docker's bridge.
        AUTHZ_HOST                  = "0.0.0.0"
        AUTHZ_METRICS_PORT          = "7092"
        AGENT_DOMAIN                = var.agent_domain
        AUTHZ_REDIS_TIMEOUT_MS      = "100"
        WAKE_TIMEOUT_SECONDS        = var.wake_timeout_seconds
        # A container sees the host's cores (os.availableParallelism ignores Docker's CPU
        # share), so the workers are set, one per core that resources reserve below.
        AUTHZ_WORKERS               = var.authz_workers
        # Not authz's: read by the envoy.yaml template below ({{ env "CONSOLE_ORIGIN" }}:
        # Nomad gives templates the task's env).
        CONSOLE_ORIGIN              = var.console_origin
      }

      # envoy/envoy.yaml and envoy/tls-listener.yaml, for Envoy and for authz's xDS server, in
      # the allocation's shared directory: NOMAD_ALLOC_DIR, /alloc in both tasks' containers. A
      # destination there is allowed: Nomad interpolates it with the client's own paths and
      # refuses only one that escapes both the task's directory and the allocation's shared
      # one (client/allocrunner/taskrunner/template/template.go, `parseTemplateConfigs`, calls
      # client/taskenv/env.go, `TaskEnv.ClientPath`, whose `checkEscape` accepts either), and
      # the job API only checks that it stays in the allocation (nomad/structs/structs.go,
      # `Template.Validate`; helper/escapingfs/escapes.go, `PathEscapesAllocViaRelative`).
      # consul-template makes the directory 0755 (renderer/renderer.go, `AtomicWrite`) and the
      # files take the default perms, 0644 (api/tasks.go, `Template.Canonicalize`), so Envoy's
      # uid 101 and authz's 1000 read them.
      #
      # authz's task renders them, not Envoy's: authz is a prestart sidecar, running before
      # Envoy's task starts (the comment above the task), and its templates render before
      # authz does (client/allocrunner/taskrunner/template_hook.go, `templateHook.Prestart`
      # waits in `renderTemplates` for every template's first render), so both files exist
      # when authz reads them at start and when Envoy reads its bootstrap.
      # They read the task's environment only (CONSOLE_ORIGIN and NOMAD_ALLOC_DIR:
      # template.go, `templateRunner` sets runner.Env), no Consul, Vault or Variable:
      # rendered once, they never change while the tasks run, so nothing restarts either
      # behind a job update's back.
      template {
        destination = "${NOMAD_ALLOC_DIR}/envoy/envoy.yaml"
        change_mode = "noop"
        data        = <<EOT
# The production edge of the agent platform: every request to an agent URL
# (https://<slug>.<agent domain>, or http://…:7080) passes here. See envoy/README.md and
# docs/contract.md, "Edge". On Nomad the TLS listener is on 7443, which a load balancer
# or the node's port forward maps 443 to (docs/nomad.md, "HTTPS").
#
#   caller ─┬─► listener 0.0.0.0:7443 (TLS) ─┬─► ext_authz (gRPC) ──► cluster authz: a Unix socket,
#           └─► listener 0.0.0.0:7080 ───────┘   │                     authz being Envoy's sidecar
#               (one HTTP connection manager)    └► router ──► cluster agents (ORIGINAL_DST: the
#                                                              replica authz chose, from dynamic metadata)
#
# Static bootstrap: nothing here changes per agent. Which hostnames exist, who may call,
# the rate limits and the replica to use are all answered by authz, per request, from Redis.
# test/envoy-config.test.ts checks this file against Envoy's v3 protos (unknown fields,
# every @type, protoc-gen-validate rules) and the choices below.

admin:
  # Admin can drain listeners and dump config: never reachable from outside the host.
  address:
    socket_address: { address: 127.0.0.1, port_value: 9901 }

# Envoy's edge best practice: cap downstream connections across all listeners, so a
# connection flood hits a limit instead of memory.
overload_manager:
  resource_monitors:
    - name: envoy.resource_monitors.global_downstream_max_connections
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig
        max_active_downstream_connections: 50000

# xDS needs a node name and cluster: an SDS or ADS subscription without them refuses to start
# (source/common/config/utility.cc, Utility::checkLocalInfo, called by
# TlsCertificateSdsApi::create and the gRPC mux). authz serves every node the same.
node:
  id: agent-edge
  cluster: agent-platform-edge

# The HTTPS listener comes from authz over ADS (one gRPC stream for the listener and its
# certificates), on authz's second socket (cluster authz_xds). A listener added by LDS can be
# changed in place: a new custom domain adds one filter chain, and only a changed chain's
# connections drain (source/common/listener_manager/listener_manager_impl.cc,
# ListenerManagerImpl::addOrUpdateListener, then ListenerImpl::supportUpdateFilterChain and
# newListenerWithFilterChain; a listener from static_resources cannot be updated at all,
# ListenerImpl::blockUpdate,
# blockLdsUpdate in newer releases). Envoy keeps the last listener it accepted while authz is away.
dynamic_resources:
  lds_config:
    ads: {}
    resource_api_version: V3
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services:
      - envoy_grpc: { cluster_name: authz_xds }

static_resources:
  listeners:
    # The agent edge's plain-HTTP port: http://<slug>.<agent domain>:7080, or :80 where a
    # load balancer or a port forward maps it. The TLS listener below serves the same
    # connection manager (authz copies it into the HTTPS listener it serves).
    - name: agent_edge
      address:
        socket_address: { address: 0.0.0.0, port_value: 7080 }
      # Edge best practice: bound what one slow connection can make Envoy buffer.
      per_connection_buffer_limit_bytes: 32768
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              # One connection manager for both listeners: authz reads these filters from this
              # file and puts them in every chain of the HTTPS listener it serves, so filters,
              # routes, limits and logs cannot drift apart. Their HTTP stats add up under
              # http.agent_edge.*; the listeners' own (listener.0.0.0.0_7443.ssl.* for TLS) tell
              # them apart.
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: agent_edge
                codec_type: AUTO

                # Client address. authz counts the per-caller limit against the Check's
                # source.address, which Envoy fills with the TCP peer of the downstream
                # connection (never from X-Forwarded-For). With use_remote_address and 0
                # trusted hops, Envoy also ignores any X-Forwarded-For the client sent when
                # deciding the client address, and writes that peer into
                # x-envoy-external-address for external (non-RFC 1918) callers.
                #
                # Behind a trusted load balancer (one that appends the real client to
                # X-Forwarded-For), set xff_num_trusted_hops to the number of such proxies
                # (usually 1) and switch authz to read x-envoy-external-address (see
                # README "Client address"); source.address would otherwise be the load
                # balancer for every caller. Never raise it when clients connect directly:
                # they could then choose their own address with an X-Forwarded-For header.
                use_remote_address: true
                xff_num_trusted_hops: 0

                # Every answer carries the request's x-request-id, Envoy's own local replies
                # (502, 503) as much as authz's denials and agents' answers, so a caller can
                # quote it (ConnectionManagerUtility::mutateResponseHeaders sets it from the
                # request when this is on; otherwise only when tracing is forced). The local
                # edge does the same (envoy/local-edge/server.ts).
                always_set_request_id_in_response: true
                # Edge best practices (Envoy docs, "Configuring Envoy as an edge proxy").
                normalize_path: true
                merge_slashes: true
                request_headers_timeout: 10s
                # Long enough for an agent that thinks before its next token; a stream with
                # no bytes in either direction for this long is dead.
                stream_idle_timeout: 300s
                common_http_protocol_options:
                  idle_timeout: 3600s
                  headers_with_underscores_action: REJECT_REQUEST
                http2_protocol_options:
                  max_concurrent_streams: 100
                  initial_stream_window_size: 65536
                  initial_connection_window_size: 1048576

                access_log:
                  - name: envoy.access_loggers.stdout
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
                      log_format:
                        # One JSON object per request. Never log authorization (authz
                        # removes it before the router anyway).
                        json_format:
                          time: "%START_TIME%"
                          request_id: "%REQ(X-REQUEST-ID)%"
                          client: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"
                          authority: "%REQ(:AUTHORITY)%"
                          method: "%REQ(:METHOD)%"
                          path: "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"
                          status: "%RESPONSE_CODE%"
                          response_flags: "%RESPONSE_FLAGS%"
                          duration_ms: "%DURATION%"
                          bytes_received: "%BYTES_RECEIVED%"
                          bytes_sent: "%BYTES_SENT%"
                          upstream_host: "%UPSTREAM_HOST%"
                          agent_id: "%REQ(X-AGENT-ID)%"
                  # Agents' request figures (GET /v1/agents/{id}/metrics): every request
                  # authz allowed is streamed to authz's access-log service, over its socket,
                  # which counts those a replica answered (authz/access-log-entry.ts) and writes
                  # each agent's second to Redis once. Only entries whose ext_authz metadata
                  # names an agent are sent (envoy source/common/access_log/access_log_impl.cc,
                  # `MetadataFilter::evaluate`, reads the stream's dynamic metadata), so a flood
                  # of denials costs authz nothing here.
                  - name: envoy.access_loggers.http_grpc
                    filter:
                      metadata_filter:
                        matcher:
                          filter: envoy.filters.http.ext_authz
                          path: [{ key: agent_id }]
                          value: { present_match: true }
                        match_if_key_not_found: false
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig
                      common_config:
                        log_name: agent_requests
                        transport_api_version: V3
                        grpc_service:
                          envoy_grpc: { cluster_name: authz }
                        # Envoy's defaults, written out: entries go in batches every second, or
                        # sooner past 16 KiB; past that while authz is slow they are dropped
                        # (access_logs.grpc_access_log.logs_dropped), never queued without bound.
                        buffer_flush_interval: 1s
                        buffer_size_bytes: 16384

                # Envoy's own failures on the way to a replica become the plain-text
                # edge replies of docs/contract.md. Mappers match on response flags: authz's denials
                # (401/404/429/503 with their own bodies) are local replies too, flagged
                # UAEX, and only the ext_authz error mapper matches UAEX (with a status
                # authz never uses), so denials pass untouched. For the same reason there
                # is no global body_format.
                local_reply_config:
                  mappers:
                    # UF: connect failed (nothing listens on deploy.port); URX: retries or
                    # connect attempts exhausted; UC/UR: the replica closed or reset the
                    # stream before answering (it crashed). docs/contract.md, "Edge replies": 502.
                    - filter:
                        response_flag_filter: { flags: [UF, URX, UC, UR] }
                      status_code: 502
                      body: { inline_string: "bad gateway: the agent is not reachable\n" }
                    # UH: no host to send to. authz always names a replica when it allows,
                    # so this means no destination reached the ORIGINAL_DST cluster. docs/contract.md: 503.
                    - filter:
                        response_flag_filter: { flags: [UH] }
                      status_code: 503
                      body: { inline_string: "service unavailable: the agent has no running replica\n" }
                    # UO: a circuit breaker below overflowed; say so in plain text.
                    - filter:
                        response_flag_filter: { flags: [UO] }
                      status_code: 503
                      body: { inline_string: "service unavailable: the edge is overloaded, retry later\n" }
                    # authz unreachable, too slow or failing (a gRPC error or the 35 s timeout):
                    # ext_authz sends status_on_error with an EMPTY body and the same UAEX flag
                    # as authz's own denials (envoy source/extensions/filters/http/ext_authz/
                    # ext_authz.cc, `Filter::onComplete`, CheckStatus::Error). status_on_error is
                    # therefore 504, a status authz never denies with: this mapper matches the
                    # error alone and turns it into a plain-text 503 (docs/contract.md), while authz's own 503s
                    # (no replica, Redis down) keep their bodies.
                    - filter:
                        and_filter:
                          filters:
                            - response_flag_filter: { flags: [UAEX] }
                            - status_code_filter:
                                comparison: { op: EQ, value: { default_value: 504, runtime_key: edge.ext_authz_error_status } }
                      status_code: 503
                      body: { inline_string: "service unavailable: the edge cannot check requests right now\n" }

                route_config:
                  name: agent_routes
                  virtual_hosts:
                    # One catch-all virtual host: every hostname, known or not, reaches
                    # authz, which answers 404 for a hostname no agent has. Routing by
                    # hostname here would need a config change per agent.
                    - name: agents
                      domains: ["*"]
                      # The web console's "Try it" calls agents from the console's origin (the
                      # control API's address) with an access key: a cross-origin request the
                      # browser preflights. This policy is the cors filter's (below); CONSOLE_ORIGIN
                      # in nomad-jobs/envoy.nomad.hcl fills allow_origin_string_match, and the local
                      # edge copies the rest (envoy/local-edge/cors.ts, held to this file by
                      # test/local-edge-parity.test.ts). Other origins get no CORS headers.
                      typed_per_filter_config:
                        envoy.filters.http.cors:
                          "@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy
                          allow_origin_string_match:
                            - exact: {{ env "CONSOLE_ORIGIN" | toJSON }}
                          # What "Try it" sends: POST /invoke with a JSON body and the key.
                          allow_methods: "GET, POST"
                          allow_headers: "authorization, content-type"
                          # The edge's denials carry these (429 Retry-After, 401 WWW-Authenticate).
                          expose_headers: "retry-after, www-authenticate, x-request-id"
                          max_age: "600"
                      routes:
                        # ACME HTTP-01 challenges (RFC 8555 §8.3) must be answerable over plain
                        # HTTP, so the redirect below never takes them: they go where every
                        # request goes (anchor agent_route).
                        - match: { prefix: "/.well-known/acme-challenge/" }
                          route: &agent_route
                            cluster: agents
                            # An LLM call with tool use can run for minutes. The timeout
                            # counts from the end of the request to the end of the
                            # response; bodies stream both ways (no buffering filter).
                            timeout: 300s
                            # A response that stops producing bytes for 2 minutes is cut.
                            idle_timeout: 120s
                        # EDGE_HTTP_REDIRECT: a plain-HTTP request is answered 308 to
                        # https://<same host>:443<same path and query>: 443 is the port callers
                        # use, which the load balancer maps to the TLS listener's 7443. Off unless
                        # the runtime key edge.http_redirect is 100 (the job variable
                        # edge_http_redirect adds envoy's --config-yaml layer to the task's args;
                        # without one, the default below, 0, holds:
                        # source/common/runtime/runtime_impl.cc, SnapshotImpl::featureEnabled).
                        # Only plain HTTP matches: with use_remote_address and no trusted hops the
                        # connection manager sets x-forwarded-proto from the connection itself,
                        # https on the TLS listener whatever a client sent (source/common/http/
                        # conn_manager_utility.cc, ConnectionManagerUtility::mutateRequestHeaders),
                        # and routes are matched after that. port_redirect drops the request's
                        # own port (7080) for 443 (source/common/http/utility.cc, Utility::newUri
                        # and processRequestHost). authz is not asked (ext_authz disabled on this
                        # route): a redirect reaches no agent, so it spends no rate limit or usage.
                        - match:
                            prefix: "/"
                            headers:
                              - name: x-forwarded-proto
                                string_match: { exact: http }
                            runtime_fraction:
                              default_value: { numerator: 0, denominator: HUNDRED }
                              runtime_key: edge.http_redirect
                          redirect:
                            https_redirect: true
                            port_redirect: 443
                            response_code: PERMANENT_REDIRECT
                          typed_per_filter_config:
                            envoy.filters.http.ext_authz:
                              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute
                              disabled: true
                        - match: { prefix: "/" }
                          route: *agent_route

                http_filters:
                  # CORS before ext_authz. A preflight (OPTIONS with Origin and
                  # Access-Control-Request-Method) from the allowed origin is answered here, 200
                  # with the policy's headers, and stops the chain: it carries no key, and never
                  # reaches authz or an agent. Every other request, a preflight from another
                  # origin included (forward_not_matching_preflights defaults to true), goes on
                  # to ext_authz as before. On the way back the filter sets
                  # Access-Control-Allow-Origin and -Expose-Headers on every response to the
                  # allowed origin, authz's denials and local replies too: they run through the
                  # whole encoder chain, so the console can read a 401's message. (envoy
                  # source/extensions/filters/http/cors/cors_filter.cc, `CorsFilter::decodeHeaders`
                  # and `CorsFilter::encodeHeaders`; source/common/http/filter_manager.cc,
                  # `DownstreamFilterManager::sendLocalReplyViaFilterChain` encodes from the first
                  # encoder filter.)
                  - name: envoy.filters.http.cors
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors
                  - name: envoy.filters.http.ext_authz
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
                      grpc_service:
                        envoy_grpc: { cluster_name: authz }
                        # Every Check is one Redis round trip (~1 ms), and authz answers its own
                        # 503 within AUTHZ_REDIS_TIMEOUT_MS (100 ms) when Redis hangs. The one
                        # long Check is a parked agent's wake (docs/edge.md, "Wake"): authz holds
                        # it up to WAKE_TIMEOUT_SECONDS (30 s at most) and then answers 503 itself,
                        # so this deadline is that plus 5 s. It bounds the whole Check call
                        # (envoy source/extensions/filters/common/ext_authz/ext_authz_grpc_impl.cc,
                        # `GrpcClientImpl::check`, options.setTimeout). Only a hung authz makes a
                        # caller wait it out. The route timeout below starts after the Check
                        # (source/common/router/router.cc, `Filter::onRequestComplete` arms it once
                        # the router has the whole request, and the router sees nothing before
                        # ext_authz lets the request on), so the wake does not eat into it.
                        timeout: 35s
                      transport_api_version: V3
                      # Fail closed: authz unreachable, slow or erroring → never allow.
                      # 504 only marks the error for local_reply_config above, which
                      # answers the caller a plain-text 503.
                      failure_mode_allow: false
                      status_on_error: { code: GatewayTimeout }
                      # Only what authz reads. The hostname, method, path and client address
                      # are attributes of every CheckRequest whatever this list says, so no
                      # host/:authority here. authorization carries the access key;
                      # x-envoy-external-address carries the client address when Envoy is
                      # behind trusted proxies (xff_num_trusted_hops > 0). traceparent (the
                      # caller's W3C trace context) and x-request-id (the connection manager's
                      # id, set before any filter runs) are what authz starts or continues an
                      # invoke's trace from (contract/edge-trace.ts): the CheckRequest's own
                      # `id` is the stream's number, not the request id (envoy
                      # source/extensions/filters/common/ext_authz/check_request_utils.cc,
                      # `CheckRequestUtils::setHttpRequest`). Nothing else a client sends
                      # (cookies, bodies, other headers) goes to authz.
                      allowed_headers:
                        patterns:
                          - exact: authorization
                          - exact: x-envoy-external-address
                          - exact: traceparent
                          - exact: x-request-id
                      include_peer_certificate: false
                      # The route is the same for every request (one cluster); the
                      # destination travels as dynamic metadata, not through routing.
                      clear_route_cache: false
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router

    # HTTPS for agent URLs (agent_edge_tls, on 7443) is not here: Envoy takes it from authz by
    # LDS (dynamic_resources above), built from the job's copy of envoy/tls-listener.yaml,
    # rendered beside this file, with this listener's connection manager, and one filter
    # chain per custom domain (envoy/README.md).

    # Prometheus scrapes Envoy's own stats here (Consul service platform-edge-metrics in
    # nomad-jobs/envoy.nomad.hcl). Only GET /stats/prometheus goes through, to the admin
    # listener, which stays on 127.0.0.1: it can also drain listeners, change log levels
    # and quit Envoy. A listener of its own proxying to the admin cluster is the way Envoy's
    # maintainers point to (envoyproxy/envoy issue 2182). Edge nodes face the internet:
    # firewall 9902 to the Prometheus network (docs/operations/metrics.md).
    - name: prometheus_stats
      address:
        socket_address: { address: 0.0.0.0, port_value: 9902 }
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: prometheus_stats
                codec_type: AUTO
                request_headers_timeout: 10s
                route_config:
                  name: prometheus_stats
                  virtual_hosts:
                    - name: stats
                      domains: ["*"]
                      routes:
                        - match:
                            path: /stats/prometheus
                            headers:
                              - name: ":method"
                                string_match: { exact: GET }
                          route: { cluster: envoy_admin, timeout: 10s }
                        # Every other admin endpoint stays off the network.
                        - match: { prefix: "/" }
                          direct_response:
                            status: 404
                            body: { inline_string: "not found\n" }
                http_filters:
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router

  clusters:
    # Every agent replica, whatever agent it belongs to. ORIGINAL_DST makes the host per
    # request from ext_authz's dynamic metadata: namespace envoy.filters.http.ext_authz,
    # key upstream, value "ip:port" (Envoy ≥ 1.27). Clients cannot write dynamic metadata,
    # and use_http_header is off, so x-envoy-original-dst-host is ignored: no client can
    # pick a destination. Without the metadata there is no host (the listener does not
    # restore original destinations), which is UH → 503 above.
    - name: agents
      type: ORIGINAL_DST
      lb_policy: CLUSTER_PROVIDED
      original_dst_lb_config:
        use_http_header: false
        metadata_key:
          key: envoy.filters.http.ext_authz
          path:
            - key: upstream
      # Replicas are on the same network; a refused connection fails at once, and a dead
      # address gives up after 2 s → UF → 502.
      connect_timeout: 2s
      # Hosts unused for this long are dropped, so stopped replicas do not linger.
      cleanup_interval: 10s
      per_connection_buffer_limit_bytes: 32768
      # One cluster serves every agent, so the defaults (1024 connections, pending and
      # active requests; 3 retries) would cap the whole platform. Per-agent fairness is
      # authz's rate limits, not this.
      circuit_breakers:
        thresholds:
          - priority: DEFAULT
            max_connections: 100000
            max_pending_requests: 100000
            max_requests: 100000
            max_retries: 10000
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          # Runtime contract v1 serves HTTP/1.1. Close idle keep-alive connections before a
          # replica's own server would, to avoid racing its close.
          common_http_protocol_options:
            idle_timeout: 4s
          explicit_http_config:
            http_protocol_options: {}

    # authz, the gRPC ext_authz service, is Envoy's sidecar: the task "authz" of this group,
    # serving Checks and the access-log stream on a Unix socket in the allocation's shared
    # directory (NOMAD_ALLOC_DIR, /alloc in both tasks' containers). Nothing but this Envoy
    # reaches its gRPC server, and authz's health never changes this file. A pipe address
    # is an address like any other to a STATIC cluster: envoy source/common/network/
    # resolver_impl.cc, `resolveProtoAddress`, makes a PipeInstance of it (address_impl.cc),
    # and every upstream connection, health checks' included, is
    # `dispatcher.createClientConnection` on the host's address (source/common/upstream/
    # upstream_impl.cc, `HostImplBase::createConnection` and `createHealthCheckConnection`;
    # source/extensions/health_checkers/grpc/health_checker_impl.cc,
    # `GrpcActiveHealthCheckSession::onInterval`).
    - name: authz
      type: STATIC
      connect_timeout: 0.25s
      load_assignment:
        cluster_name: authz
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    pipe: { path: {{ env "NOMAD_ALLOC_DIR" }}/tmp/authz.sock }
      # gRPC needs HTTP/2.
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config:
            http2_protocol_options:
              connection_keepalive: { interval: 30s, timeout: 5s }
      # Every edge request is one Check: the default 1024 concurrent requests would turn a
      # busy minute into status_on_error 503s.
      circuit_breakers:
        thresholds:
          - priority: DEFAULT
            max_connections: 1024
            max_pending_requests: 100000
            max_requests: 100000
      # The standard gRPC health service authz serves. With a single host Envoy keeps
      # sending Checks even while it is unhealthy (panic mode), so this is for visibility
      # (/clusters on the admin port), never a way to fail open.
      health_checks:
        - timeout: 1s
          interval: 5s
          unhealthy_threshold: 2
          healthy_threshold: 1
          grpc_health_check: {}

    # authz's xDS server (AUTHZ_XDS_SOCKET): the HTTPS listener and custom domains'
    # certificates, on a socket of its own beside authz.sock in the allocation's directory,
    # served by grpc-js apart from the Check path.
    - name: authz_xds
      type: STATIC
      connect_timeout: 0.25s
      load_assignment:
        cluster_name: authz_xds
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    pipe: { path: {{ env "NOMAD_ALLOC_DIR" }}/tmp/authz-xds.sock }
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config:
            http2_protocol_options:
              connection_keepalive: { interval: 30s, timeout: 5s }

    # Envoy's admin listener, for the prometheus_stats listener above only.
    - name: envoy_admin
      type: STATIC
      connect_timeout: 0.25s
      load_assignment:
        cluster_name: envoy_admin
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    socket_address: { address: 127.0.0.1, port_value: 9901 }
EOT
      }

      # The HTTPS listener's template. Its SDS file is Envoy's, in the Envoy task's secrets:
      # authz passes the path on, and Envoy reads it (the comment in the file).
      template {
        destination = "${NOMAD_ALLOC_DIR}/envoy/tls-listener.yaml"
        change_mode = "noop"
        data        = <<EOT
# envoy.yaml's HTTPS listener, agent_edge_tls, which Envoy takes from authz by LDS (envoy.yaml,
# dynamic_resources) instead of from its bootstrap, so that each custom domain can get a
# filter chain and a certificate of its own without a restart (envoy/README.md, "Custom
# domains"). On Nomad it listens on 7443 (the group's port edge_tls; a load balancer maps
# 443 to it) and its agent-domain certificate is in the Envoy task's secrets directory.
# authz (AUTHZ_XDS_SOCKET, AUTHZ_XDS_TLS_LISTENER_FILE = this file) serves:
#
# - this Listener, with `filters` of every chain set to the filters of envoy.yaml's plain
#   listener agent_edge (AUTHZ_XDS_ENVOY_CONFIG_FILE = envoy.yaml): the one HTTP connection
#   manager both listeners share, as the YAML alias used to;
# - before the chain below, one chain per custom domain that has a certificate: the same
#   chain, with `filter_chain_match.server_names: [<hostname>]` and its certificate by SDS
#   over the same ADS stream (secret `custom_domain:<hostname>`).
#
# The chain below has no server_names: Envoy's catch-all, for the agent domain and every
# ClientHello without SNI. test/envoy-tls.test.ts checks this file, and what authz builds of
# it, against Envoy's Listener proto.
name: agent_edge_tls
address:
  socket_address: { address: 0.0.0.0, port_value: 7443 }
per_connection_buffer_limit_bytes: 32768
# Choosing a chain by server_names needs the SNI before the handshake: the TLS inspector
# reads it from the ClientHello. Envoy no longer adds it by itself (its release notes: the
# injection was turned off by default, then its runtime guard disable_tls_inspector_injection removed).
# Envoy then takes the chain whose server_names hold the SNI exactly, else the longest
# wildcard suffix, else the chain with none (source/common/listener_manager/
# filter_chain_manager_impl.cc, FilterChainManagerImpl::findFilterChainForServerName).
listener_filters:
  - name: envoy.filters.listener.tls_inspector
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector
filter_chains:
  - transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
        common_tls_context:
          tls_params:
            tls_minimum_protocol_version: TLSv1_2
            tls_maximum_protocol_version: TLSv1_3
            # The local edge offers the same list (envoy/local-edge/tls-policy.ts, held to
            # this one by test/envoy-tls.test.ts).
            cipher_suites:
              - ECDHE-ECDSA-AES128-GCM-SHA256
              - ECDHE-RSA-AES128-GCM-SHA256
              - ECDHE-ECDSA-CHACHA20-POLY1305
              - ECDHE-RSA-CHACHA20-POLY1305
              - ECDHE-ECDSA-AES256-GCM-SHA384
              - ECDHE-RSA-AES256-GCM-SHA384
          alpn_protocols: ["h2", "http/1.1"]
          # The certificate for *.<agent domain>, by SDS from a file Envoy reads: the Envoy
          # task's templates render envoy/tls-sds.yaml as the path below, and tls.crt and
          # tls.key beside it from the Variable nomad/jobs/platform-edge/edge/envoy, by a
          # rename into the directory (consul-template renderer/renderer.go, AtomicWrite).
          # The path is the Envoy container's: a docker task's secrets directory is /secrets
          # (client/allocdir/fs_unix.go, TaskSecretsContainerPath), written out here because
          # authz renders this file, and authz's own NOMAD_SECRETS_DIR is another directory.
          # A certificate and key moved into the directory are served to new connections
          # without a restart, and connections already open keep the one they started with.
          # - The Secret's TlsCertificate names its watched_directory: a move into it
          #   makes Envoy read the chain and key again, together, until two reads agree
          #   (source/common/secret/sds_api.cc, SdsApi::onWatchUpdate; the watch is
          #   source/common/config/watched_directory.cc, inotify IN_MOVED_TO). A pair that
          #   fails to load (a key that does not match its certificate) is logged and
          #   counted (sds.agent_domain.key_rotation_failed), and the old one stays.
          # - path_config_source.watched_directory re-reads this SDS file itself on a
          #   move into the directory (source/extensions/config_subscription/filesystem/
          #   filesystem_subscription_impl.cc, FilesystemSubscriptionImpl::refresh).
          # - The new context takes new connections only: ServerSslSocketFactory::
          #   onAddOrUpdateSecret (source/common/tls/server_ssl_socket.cc) swaps it under
          #   a lock, and each open connection holds the context it was made with.
          # Only moves are seen, which is how Nomad's templates write: a changed Variable
          # is two renames, tls.crt's and tls.key's, in no set order, so one
          # key_rotation_failed between them is expected.
          tls_certificate_sds_secret_configs:
            - name: agent_domain
              sds_config:
                path_config_source:
                  path: /secrets/tls/sds.yaml
                  watched_directory: { path: /secrets/tls }
                resource_api_version: V3
    # A client that has not finished its handshake in 10 s is cut, as one that has not
    # sent its headers (request_headers_timeout); there is no limit by default.
    transport_socket_connect_timeout: 10s
EOT
      }

      # `.KEY.Value | toJSON` marshals the plain string (json.Marshal: \u0026, \n, \u0001…),
      # which go-envparse reads back exactly. `.KEY | toJSON` would go through
      # NomadVarItem.MarshalJSON, Go's %q, whose \x01, \a, \v and \x7f are not JSON: the
      # render fails (test/nomad-env-template.test.ts).
      template {
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/platform-edge/edge/authz" -}}
          REDIS_URL={{ .REDIS_URL.Value | toJSON }}
          {{- end }}
        EOT
        destination = "secrets/authz.env"
        env         = true
        change_mode = "restart"
      }

      resources {
        cpu    = 2000
        memory = 512
      }

      # authz flushes its request figures within 8 s of SIGTERM (authz/server.ts, SHUTDOWN_GRACE_MS).
      kill_timeout = "10s"
    }

    task "envoy" {
      driver = "docker"

      config {
        image = var.envoy_image
        # Host networking: callers' addresses reach Envoy unchanged (authz rate-limits per
        # client address), and the admin port stays on the host's 127.0.0.1. The
        # allocation's directory, authz's sockets and envoy.yaml in it, is mounted at /alloc
        # all the same (client/allocdir/fs_unix.go, SharedAllocContainerPath).
        network_mode = "host"
        # The bootstrap is the envoy.yaml authz's task renders (above), the one authz's xDS
        # server reads. With edge_http_redirect, the runtime layer that turns the redirect
        # route on: the very argument `npm run up` passes (scripts/lib/up-edge-tls.ts,
        # envoyRedirectArgs), merged into the bootstrap, which has no runtime of its own
        # (envoy/README.md, "HTTPS").
        args = concat(
          ["-c", "/alloc/envoy/envoy.yaml", "--log-level", "warn"],
          var.edge_http_redirect ? ["--config-yaml", "{\"layered_runtime\":{\"layers\":[{\"name\":\"edge_settings\",\"static_layer\":{\"edge.http_redirect\":100}}]}}"] : [],
        )
        pids_limit   = 2048
        # Ports 7080 and 7443 need no privilege, so no capability at all.
        cap_drop     = ["ALL"]
        security_opt = ["no-new-privileges"]
      }

      # The image's envoy user from the start. ENVOY_UID=0 makes the image's entrypoint
      # exec Envoy as it is, instead of switching users itself (chown and su-exec, which
      # need capabilities this task does not have).
      user = "101:101"
      env {
        ENVOY_UID = "0"
      }

      # The TLS listener's certificate, in the task's secrets directory: /secrets in the
      # container (client/allocdir/fs_unix.go, TaskSecretsContainerPath, which
      # client/allocrunner/taskrunner/task_dir_hook.go, `setEnvvars`, sets as
      # NOMAD_SECRETS_DIR; drivers/docker/driver.go, `containerBinds`, binds it), a tmpfs
      # of this task's own, not shared with authz (client/allocdir/fs_linux.go,
      # `createSecretDir`). First envoy/tls-sds.yaml, naming the files below: it reads the
      # task's environment only, so it renders once.
      template {
        destination = "secrets/tls/sds.yaml"
        change_mode = "noop"
        data        = <<EOT
# The agent domain's certificate for the HTTPS listener (agent_edge_tls, which authz serves
# Envoy from tls-listener.yaml), delivered by SDS from this file: envoy/tls-sds.yaml, in the
# task's secrets directory instead of
# /etc/agent-platform/tls. tls.crt and tls.key beside it come from the Variable
# nomad/jobs/platform-edge/edge/envoy (items tls_crt and tls_key).
resources:
  - "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
    name: agent_domain
    tls_certificate:
      certificate_chain: { filename: {{ env "NOMAD_SECRETS_DIR" }}/tls/tls.crt }
      private_key: { filename: {{ env "NOMAD_SECRETS_DIR" }}/tls/tls.key }
      watched_directory: { path: {{ env "NOMAD_SECRETS_DIR" }}/tls }
EOT
      }

      # The chain and the key, from the Variable at this task's own path, which no other
      # task reads (acl/acl.go, `matchingVariablesCapabilitySet`). A new Variable re-renders
      # both, and no restart follows (change_mode "noop"): consul-template writes each file
      # beside its destination and renames it in (renderer/renderer.go, `AtomicWrite`:
      # os.CreateTemp in the same directory, then os.Rename), which is the move Envoy's
      # watched_directory sees (tls-listener.yaml, agent_edge_tls). A file rendered over an
      # existing one takes that one's owner before the rename (renderer/file_perms.go,
      # `preserveFilePermissions`), so Envoy (uid 101) can read the new key the moment it
      # appears; uid and gid give the first render that owner, perms keep it Envoy's alone.
      # Nomad renders a task's templates in no set order (template.go, `newRunnerConfig`
      # ranges over a map): between the two renames Envoy may see a new chain beside the
      # old key, refuse that pair (sds.agent_domain.key_rotation_failed) and keep serving
      # the old one until the second rename.
      template {
        data        = "{{ with nomadVar \"nomad/jobs/platform-edge/edge/envoy\" }}{{ .tls_crt.Value }}{{ end }}"
        destination = "secrets/tls/tls.crt"
        perms       = "0600"
        uid         = 101
        gid         = 101
        change_mode = "noop"
      }

      template {
        data        = "{{ with nomadVar \"nomad/jobs/platform-edge/edge/envoy\" }}{{ .tls_key.Value }}{{ end }}"
        destination = "secrets/tls/tls.key"
        perms       = "0600"
        uid         = 101
        gid         = 101
        change_mode = "noop"
      }

      resources {
        cpu    = 2000
        memory = 512
      }

      # Time for in-flight requests to finish before SIGKILL.
      kill_timeout = "30s"
    }
  }
}
