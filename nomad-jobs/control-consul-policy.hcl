# The Consul ACL policy of the control API's token (CONSUL_HTTP_TOKEN): read-only, the
# health of agent services and nothing else. See docs/nomad.md.
#
#   consul acl policy create -name platform-control -rules @nomad-jobs/control-consul-policy.hcl
#   consul acl token create -description "platform control API" -policy-name platform-control
#
# The driver's watch is GET /v1/health/service/agent-<id>?passing (blocking queries): it
# needs service read on the agents' services and node read for the nodes they run on.
# Nomad registers and deregisters the services itself; the control API never writes.

service_prefix "agent-" {
  policy = "read"
}

node_prefix "" {
  policy = "read"
}
