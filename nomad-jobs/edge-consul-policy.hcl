# The Consul ACL policy of the Envoy task's workload identity (nomad-jobs/envoy.nomad.hcl):
# its template lists the passing instances of service "authz", which needs read on that
# service and on the nodes it runs on. See docs/nomad.md, "Consul identities".
#
# `nomad setup consul` binds every task of Nomad namespace N to the Consul role
# nomad-N-tasks (command/setup_consul.go, the tasks binding rule), so:
#
#   consul acl policy create -name platform-edge -rules @nomad-jobs/edge-consul-policy.hcl
#   consul acl role create -name nomad-platform-tasks -policy-name platform-edge

service "authz" {
  policy = "read"
}

node_prefix "" {
  policy = "read"
}
