import { createHash } from 'node:crypto';
import { redactCredential, type RegistryCredential } from '../../domain/registry-auth.js';
import { PodmanError, type PodmanCli } from './cli.js';
import { withAuthFile } from './registry-auth-file.js';
import type { SecretScratch } from './secret-scratch.js';

/** Where an image stands for a job that needs replicas. */
export type ImageState = { ready: true; error: null } | { ready: false; error: string | null };

/** The image a job runs and whose credentials pull it. */
export interface ImageSource {
  image: string;
  /** The agent's registry_auth; absent when it has none. */
  registryAuth?: RegistryCredential;
  /** The platform's runtime image: pulled with the host's own podman credentials (the operator's). */
  platformImage?: boolean;
}

export interface ImagePullSettings {
  pullTimeoutMs: number;
  /** `--cert-dir` for pulls, null for podman's own (PODMAN_REGISTRY_CERTS_DIR). */
  registryCertsDir: string | null;
}

/** Who a pull is made as: the operator, nobody, or one credential (by a hash, kept in memory only). */
const PLATFORM = 'platform';
const ANONYMOUS = 'anonymous';
const pullerOf = (source: ImageSource): string =>
  source.registryAuth ? createHash('sha256').update(JSON.stringify(source.registryAuth)).digest('hex') : source.platformImage ? PLATFORM : ANONYMOUS;

/**
 * Pulls images outside the driver's queue: a pull may take minutes (or hang on a registry
 * that never answers), and inside the queue it held every other agent's change behind it.
 * A job whose image is missing waits with no replicas while the pull runs; when it ends,
 * `onSettled` lets the driver look again. Each pull has a deadline (PULL_TIMEOUT_SECONDS)
 * past which podman is killed and the job's replicas fail with that reason.
 *
 * Credentials (docs/orchestration.md, "Images from private registries"): an agent's image is
 * pulled with its own registry_auth through a 0600 auth file that exists only during the pull,
 * or with an empty one, never with the host's credentials, which pull only the platform's
 * runtime image. An image on this host is shared by every agent, so one pulled with
 * credentials is used only once the registry let the same credentials (or no credential,
 * for an agent without) have it, in this process: an agent of another account cannot run a
 * private image just because someone else's pull left it here.
 */
export class ImagePulls {
  private readonly inFlight = new Set<string>();
  /** Why the last pull of an image (by a puller) failed, until a job's replicas have been failed with it. */
  private readonly failures = new Map<string, string>();
  /** Per image, the pullers the registry served it to since this process started. */
  private readonly servedTo = new Map<string, Set<string>>();
  /** Images pulled with credentials since this process started. */
  private readonly pulledWithCredentials = new Set<string>();

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: ImagePullSettings,
    private readonly onSettled: (image: string) => void,
    /** Whether a job now wants the image with credentials (after a restart, before any pull). */
    private readonly wantedWithCredentials: (image: string) => boolean,
    /** Where each pull's auth file is written. */
    private readonly secrets: SecretScratch,
  ) {}

  /** Ready when the image is here (and, if private, served to this puller); otherwise starts (or keeps waiting for) a pull, or reports once why it failed. */
  async state(source: ImageSource): Promise<ImageState> {
    const { image } = source;
    const puller = pullerOf(source);
    const key = `${puller}\0${image}`;
    if (this.inFlight.has(key)) return { ready: false, error: null };
    const failure = this.failures.get(key);
    if (failure !== undefined) {
      this.failures.delete(key); // the next deploy of the same image tries again
      return { ready: false, error: failure };
    }
    const mustAsk = puller !== PLATFORM && (source.registryAuth !== undefined || this.pulledWithCredentials.has(image) || this.wantedWithCredentials(image));
    const here = await this.cli.run(['image', 'exists', image]).then(() => true, () => false);
    if (here && (!mustAsk || this.servedTo.get(image)?.has(puller))) return { ready: true, error: null };
    this.start(source, puller, key);
    return { ready: false, error: null };
  }

  private start(source: ImageSource, puller: string, key: string): void {
    const { image, registryAuth = null } = source;
    this.inFlight.add(key);
    const certs = this.settings.registryCertsDir ? ['--cert-dir', this.settings.registryCertsDir] : [];
    const pull = (authFile: string[]) => this.cli.run(['pull', '--quiet', ...certs, ...authFile, image], this.settings.pullTimeoutMs);
    void (puller === PLATFORM ? pull([]) : withAuthFile(this.secrets, registryAuth, (path) => pull(['--authfile', path])))
      .then(
        () => {
          if (!this.servedTo.has(image)) this.servedTo.set(image, new Set());
          this.servedTo.get(image)!.add(puller);
          if (registryAuth) this.pulledWithCredentials.add(image);
        },
        (error: unknown) => {
          const reason = !(error instanceof PodmanError)
            ? String(error)
            : error.stderr.startsWith('timed out') // PodmanCli killed it at the deadline
              ? `no result within ${Math.round(this.settings.pullTimeoutMs / 1000)} s (PULL_TIMEOUT_SECONDS)`
              : (error.stderr.trim().split('\n').pop() ?? '');
          // The registry's own words, shown to the agent's owner: never with the secret in them.
          this.failures.set(key, redactCredential(`image ${image} could not be pulled: ${reason}`, registryAuth));
        },
      )
      .finally(() => {
        this.inFlight.delete(key);
        this.onSettled(image);
      });
  }
}
