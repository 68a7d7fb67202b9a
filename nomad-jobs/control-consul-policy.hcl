# The Consul ACL policy of the control API's token (CONSUL_HTTP_TOKEN): read-only, the
# health of agent services and nothing else. See docs/nomad.md.
#
#   consul acl policy create -name platform-control -rules @nomad-jobs/control-consul-policy.hcl
#   consul acl token create -description "platform control API" -policy-name platform-control
#
# The driver's watch is one blocking query, GET /v1/health/state/any filtered on the tag
# every agent service carries; Consul drops from the answer the checks whose service or
# node the token cannot read, so it needs service read on the agents' services (named
# agent-<slug>) and node read for the nodes they run on.
# Nomad registers and deregisters the services itself; the control API never writes.

service_prefix "agent-" {
  policy = "read"
}

node_prefix "" {
  policy = "read"
}
