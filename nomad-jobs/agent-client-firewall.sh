#!/usr/bin/env bash
# Firewall rules for the Nomad client nodes that run agents (docs/nomad.md, "Network rules").
#
# Agent containers run code we do not control. On a Nomad client they sit on the docker
# bridge (docker0) or Nomad's CNI bridge ("nomad", bridge networking mode). From there,
# without these rules, they reach whatever the node reaches: the platform's Postgres and
# Redis, the Nomad and Consul HTTP APIs (on the node itself and on the servers), other
# agents, and the cloud metadata service at 169.254.169.254 (instance credentials).
#
# What the rules do, for traffic that ENTERS from an agent bridge:
#   - replies on connections others opened to the agent (the edge calling a replica) pass;
#   - to the node itself (INPUT): everything is refused, so the node's Nomad (4646),
#     Consul (8500/8501/8502/8600) and any other host port are out of reach;
#   - the agent services (AGENT_SERVICES_ADDRESS, the control API's listener replicas keep
#     their conversations through) pass, at that one address and TCP port only;
#   - forwarded elsewhere (FORWARD): AGENT_FIREWALL_ALLOW passes first (e.g. an internal
#     DNS resolver or an egress proxy), then link-local (169.254.0.0/16, the metadata
#     service), the private ranges (10/8, 172.16/12, 192.168/16, 100.64/10: the
#     platform's networks and other agents) and AGENT_FIREWALL_DENY (platform addresses
#     outside those ranges, e.g. a managed Postgres with a public address) are refused;
#   - everything else, the internet, passes.
#
# Idempotent: it owns two chains (AGENT-EGRESS, AGENT-HOST), flushes and refills them, and
# adds each jump only when it is missing. Docker and Nomad put their own ACCEPT rules at
# the top of FORWARD when they start, so the egress jump goes where they leave room for
# the operator: DOCKER-USER (Docker) and NOMAD-ADMIN (Nomad's CNI bridge, checked before
# its accept rules), and FORWARD only when neither exists. Run it at boot after Docker and
# Nomad have started, so those chains exist.
#
# Settings (environment):
#   AGENT_BRIDGES         bridge interfaces agents are on      (default: "docker0 nomad")
#   AGENT_SERVICES_ADDRESS  IPv4:port of the agent services, the host and port of the control
#                         API's NOMAD_AGENT_SERVICES_URL (default: none, nothing let through)
#   AGENT_FIREWALL_ALLOW  CIDRs agents may reach despite the rules below (default: none)
#   AGENT_FIREWALL_DENY   more CIDRs to refuse                 (default: none)
#   AGENT_FORWARD_CHAINS  chains to hook egress into (default: those of DOCKER-USER and
#                         NOMAD-ADMIN that exist, else FORWARD)
#   IPTABLES              the iptables command                  (default: iptables)
#
# IPv4 only: docker and Nomad's bridge give containers no IPv6 unless configured to.
set -euo pipefail

IPTABLES=${IPTABLES:-iptables}
read -r -a BRIDGES <<<"${AGENT_BRIDGES:-docker0 nomad}"
read -r -a ALLOW <<<"${AGENT_FIREWALL_ALLOW:-}"
read -r -a DENY <<<"${AGENT_FIREWALL_DENY:-}"
SERVICES=${AGENT_SERVICES_ADDRESS:-}
BLOCKED_RANGES=(169.254.0.0/16 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10)
EGRESS=AGENT-EGRESS
HOST=AGENT-HOST

if [[ ${#BRIDGES[@]} -eq 0 ]]; then
  echo "agent-client-firewall: AGENT_BRIDGES is empty; name the bridge(s) agent containers use" >&2
  exit 64
fi
if [[ -n $SERVICES ]] && ! [[ $SERVICES =~ ^([0-9]{1,3}(\.[0-9]{1,3}){3}):([1-9][0-9]{0,4})$ && ${BASH_REMATCH[3]} -le 65535 ]]; then
  echo "agent-client-firewall: AGENT_SERVICES_ADDRESS \"$SERVICES\" is not IPv4:port (the address and port of NOMAD_AGENT_SERVICES_URL)" >&2
  exit 64
fi
for cidr in "${ALLOW[@]}" "${DENY[@]}"; do
  if ! [[ $cidr =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}(/[0-9]{1,2})?$ ]]; then
    echo "agent-client-firewall: \"$cidr\" is not an IPv4 address or CIDR (AGENT_FIREWALL_ALLOW / AGENT_FIREWALL_DENY)" >&2
    exit 64
  fi
done

ipt() { "$IPTABLES" -w "$@"; }
chain_exists() { ipt -n -L "$1" >/dev/null 2>&1; }
ensure_chain() { chain_exists "$1" || ipt -N "$1"; ipt -F "$1"; }
# Adds the rule at the top of the chain unless an identical one is already there.
ensure_jump() {
  local chain=$1
  shift
  ipt -C "$chain" "$@" 2>/dev/null || ipt -I "$chain" 1 "$@"
}

read -r -a FORWARD_CHAINS <<<"${AGENT_FORWARD_CHAINS:-}"
if [[ ${#FORWARD_CHAINS[@]} -eq 0 ]]; then
  for chain in DOCKER-USER NOMAD-ADMIN; do
    if chain_exists "$chain"; then FORWARD_CHAINS+=("$chain"); fi
  done
  if [[ ${#FORWARD_CHAINS[@]} -eq 0 ]]; then FORWARD_CHAINS=(FORWARD); fi
fi

# The agent services: one address, one TCP port, nothing else of that host.
allow_services() {
  if [[ -n $SERVICES ]]; then ipt -A "$1" -d "${SERVICES%:*}/32" -p tcp --dport "${SERVICES##*:}" -j RETURN; fi
}

# Egress from agents to other hosts.
ensure_chain "$EGRESS"
ipt -A "$EGRESS" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
allow_services "$EGRESS"
for cidr in "${ALLOW[@]}"; do ipt -A "$EGRESS" -d "$cidr" -j RETURN; done
for cidr in "${BLOCKED_RANGES[@]}" "${DENY[@]}"; do
  # REJECT rather than DROP: a refused connection fails at once instead of hanging the agent.
  ipt -A "$EGRESS" -d "$cidr" -p tcp -j REJECT --reject-with tcp-reset
  ipt -A "$EGRESS" -d "$cidr" -j REJECT --reject-with icmp-admin-prohibited
done

# Agents to the node itself.
ensure_chain "$HOST"
ipt -A "$HOST" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
allow_services "$HOST"
for cidr in "${ALLOW[@]}"; do ipt -A "$HOST" -d "$cidr" -j RETURN; done
ipt -A "$HOST" -p tcp -j REJECT --reject-with tcp-reset
ipt -A "$HOST" -j REJECT --reject-with icmp-admin-prohibited

for bridge in "${BRIDGES[@]}"; do
  for chain in "${FORWARD_CHAINS[@]}"; do ensure_jump "$chain" -i "$bridge" -j "$EGRESS"; done
  ensure_jump INPUT -i "$bridge" -j "$HOST"
done

echo "agent-client-firewall: agents on ${BRIDGES[*]} kept from the node, private ranges and 169.254.0.0/16 (egress via ${FORWARD_CHAINS[*]})${SERVICES:+, except the agent services at $SERVICES}"
