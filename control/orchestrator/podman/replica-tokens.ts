import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';

/** A replica's credential for the agent services (issue 37): scoped to its agent, short-lived. */
export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** Issues replica credentials; the platform's, handed to the driver at composition. */
export type MintReplicaToken = (agentId: string, replicaId: string) => IssuedToken;

/** What a replica is given to reach the agent services: their URL, and its token file's directory. */
export interface AgentServicesAccess {
  /** As containers reach it, e.g. `http://host.containers.internal:7090`. */
  url: string;
  /** The listener's port on this host: the one host port the agent networks' firewall lets through. */
  port: number;
  mint: MintReplicaToken;
  /** Where each replica's token directory lives on the host. */
  directory: string;
  /** SESSION_MAX_BYTES, told to replicas so the runtime trims a session before the API would refuse it. */
  maxSessionBytes: number;
}

/** Where a replica finds its token: a directory mounted read-only, holding `token`. */
export const TOKEN_MOUNT = '/run/agent-services';
export const TOKEN_FILE = `${TOKEN_MOUNT}/token`;

interface Held {
  agentId: string;
  issuedAt: number;
  expiresAt: number;
}

/**
 * Each replica's agent services token, in a file the driver keeps fresh: a container's
 * environment is fixed at its start, and a token must be short-lived, so the token is a
 * file in a directory bind-mounted read-only into the replica and rewritten well before it
 * expires (at half its life). The directory, not the file, is mounted: a new token is
 * written beside the old one and renamed over it, and a bind mount of the file itself
 * would keep showing the old inode. After a restart of the control API nothing is held in
 * memory, so every adopted replica gets a new token at the first look.
 */
export class ReplicaTokenFiles {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly access: AgentServicesAccess,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    // Root's alone: no other user of the host reaches a token through it. A container sees
    // only its own replica's directory, mounted by podman, whatever this one's mode.
    mkdirSync(access.directory, { recursive: true, mode: 0o700 });
  }

  /** The host directory to mount at TOKEN_MOUNT, with a fresh token in it (before the container is created). */
  prepare(replicaId: string, agentId: string): string {
    this.write(replicaId, agentId);
    return this.directoryOf(replicaId);
  }

  /**
   * Renews the tokens past half their life, and writes one for each replica not held (an
   * adopted container); with `removeOthers`, drops the directories of replicas gone.
   * `leaving`: replicas whose removal is under way, which keep the directory they have (a
   * request on its way may still read its token) and are never written again: a listing
   * taken just before such a removal ended would otherwise bring the directory back once
   * the removal had dropped it, for good if the process stopped before the next look.
   */
  keepFresh(replicas: { replicaId: string; agentId: string }[], { removeOthers, leaving = new Set() }: { removeOthers: boolean; leaving?: ReadonlySet<string> }): void {
    const now = this.clock.now().getTime();
    const live = new Set<string>(leaving);
    for (const { replicaId, agentId } of replicas) {
      live.add(replicaId);
      if (leaving.has(replicaId)) continue;
      const held = this.held.get(replicaId);
      if (!held || held.agentId !== agentId || now >= held.issuedAt + (held.expiresAt - held.issuedAt) / 2) this.write(replicaId, agentId);
    }
    if (!removeOthers) return;
    for (const replicaId of [...this.held.keys()]) if (!live.has(replicaId)) this.forget(replicaId);
  }

  /**
   * Whether the container whose process is `pid` reads its token from the directory this
   * driver writes it to: the directory seen through the process's own root
   * (`/proc/<pid>/root`, its mount namespace) is the same one, device and inode. It is not
   * when the container was started by a control API that saw another directory at this path
   * (systemd's PrivateTmp gives each start of a service a /tmp of its own) or before the
   * directory was removed and made again: a new token then never reaches the replica, and its
   * calls fail once the one it holds expires. Null when it cannot be told (the process gone,
   * or not this user's to look into: following /proc/<pid>/root takes ptrace read access to
   * the process, Linux fs/proc/base.c proc_pid_get_link → proc_fd_access_allowed →
   * kernel/ptrace.c __ptrace_may_access): nothing is done on a guess.
   */
  mountedBy(replicaId: string, pid: number): boolean | null {
    try {
      const written = statSync(this.directoryOf(replicaId));
      const mounted = statSync(`/proc/${pid}/root${TOKEN_MOUNT}`);
      return written.dev === mounted.dev && written.ino === mounted.ino;
    } catch {
      return null;
    }
  }

  forget(replicaId: string): void {
    this.held.delete(replicaId);
    rmSync(this.directoryOf(replicaId), { recursive: true, force: true });
  }

  private write(replicaId: string, agentId: string): void {
    const { token, expiresAt } = this.access.mint(agentId, replicaId);
    const directory = this.directoryOf(replicaId);
    // Readable by the container's user, whoever it is; the directory is mounted into its replica alone.
    mkdirSync(directory, { recursive: true, mode: 0o755 });
    const next = join(directory, '.token.next');
    writeFileSync(next, `${token}\n`, { mode: 0o644 });
    renameSync(next, join(directory, 'token'));
    this.held.set(replicaId, { agentId, issuedAt: this.clock.now().getTime(), expiresAt: expiresAt.getTime() });
    this.logger.debug({ replica_id: replicaId, agent_id: agentId, expires_at: expiresAt }, 'agent services token written');
  }

  private directoryOf(replicaId: string): string {
    if (!/^[A-Za-z0-9_.-]+$/.test(replicaId)) throw new Error(`refusing a replica id as a directory name: ${JSON.stringify(replicaId)}`);
    return join(this.access.directory, replicaId);
  }
}
