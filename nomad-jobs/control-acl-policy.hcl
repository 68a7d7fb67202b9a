# The Nomad ACL policy of the control API's token (NOMAD_TOKEN), least privilege: only
# what the Nomad driver calls, only in the agents' namespace. See docs/nomad.md.
#
#   nomad acl policy apply -description "platform control API" platform-control nomad-jobs/control-acl-policy.hcl
#   nomad acl token create -name platform-control -type client -policy platform-control
#
# Rename the namespace label if NOMAD_NAMESPACE is not "agents".

namespace "agents" {
  capabilities = [
    # GET /v1/jobs (adopt agent-* jobs at start).
    "list-jobs",
    # GET job, GET /v1/allocations (the one blocking query over all agent allocations),
    # GET /v1/client/allocation/:id/stats, GET /v1/allocation/:id (agent services: does a
    # workload identity's allocation still run).
    "read-job",
    # POST /v1/jobs (register, update) and DELETE /v1/job/:id?purge=true (deregister).
    "submit-job",
    # POST /v1/job/:id/scale.
    "scale-job",
    # GET /v1/client/fs/logs/:alloc (recent and follow).
    "read-logs",
  ]

  # Secret env: the driver writes nomad/jobs/agent-<id> before registering the job and
  # destroys it with the job. Each agent's task reads its own Variable through its
  # workload identity, which needs no policy. Nothing else is readable: not the
  # platform's own Variables (another namespace), not other paths here.
  variables {
    path "nomad/jobs/agent-*" {
      capabilities = ["write", "read", "destroy"]
    }
  }
}

# GET /v1/node/pool/agents at start: says so in the log when the agents' pool is missing,
# instead of leaving every agent pending. Rename it with NOMAD_AGENT_NODE_POOL.
node_pool "agents" {
  policy = "read"
}
