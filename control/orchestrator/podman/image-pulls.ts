import { PodmanError, type PodmanCli } from './cli.js';

/** Where an image stands for a job that needs replicas. */
export type ImageState = { ready: true; error: null } | { ready: false; error: string | null };

/**
 * Pulls images outside the driver's queue: a pull may take minutes (or hang on a registry
 * that never answers), and inside the queue it held every other agent's change behind it.
 * A job whose image is missing waits with no replicas while the pull runs; when it ends,
 * `onSettled` lets the driver look again. Each pull has a deadline (PULL_TIMEOUT_SECONDS)
 * past which podman is killed and the job's replicas fail with that reason.
 */
export class ImagePulls {
  private readonly inFlight = new Set<string>();
  /** Why the last pull of an image failed, until a job's replicas have been failed with it. */
  private readonly failures = new Map<string, string>();

  constructor(
    private readonly cli: PodmanCli,
    private readonly timeoutMs: number,
    private readonly onSettled: (image: string) => void,
  ) {}

  /** Ready when the image is here; otherwise starts (or keeps waiting for) a pull, or reports once why it failed. */
  async state(image: string): Promise<ImageState> {
    if (this.inFlight.has(image)) return { ready: false, error: null };
    const failure = this.failures.get(image);
    if (failure !== undefined) {
      this.failures.delete(image); // the next deploy of the same image tries again
      return { ready: false, error: failure };
    }
    if (await this.cli.run(['image', 'exists', image]).then(() => true, () => false)) return { ready: true, error: null };
    this.start(image);
    return { ready: false, error: null };
  }

  private start(image: string): void {
    this.inFlight.add(image);
    void this.cli
      .run(['pull', '--quiet', image], this.timeoutMs)
      .then(
        () => undefined,
        (error: unknown) => {
          const reason = !(error instanceof PodmanError)
            ? String(error)
            : error.stderr.startsWith('timed out') // PodmanCli killed it at the deadline
              ? `no result within ${Math.round(this.timeoutMs / 1000)} s (PULL_TIMEOUT_SECONDS)`
              : error.stderr.trim().split('\n').pop();
          this.failures.set(image, `image ${image} could not be pulled: ${reason}`);
        },
      )
      .finally(() => {
        this.inFlight.delete(image);
        this.onSettled(image);
      });
  }
}
