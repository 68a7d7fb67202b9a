import type { ChainableCommander } from 'ioredis';

/**
 * Runs a pipeline and tells `onError` of its first failure, from the connection or from any
 * one command (ioredis resolves with each command's error in place rather than rejecting).
 * For the edge's once-a-second writes: a failed batch is reported and dropped, never retried.
 */
export async function runPipeline(pipeline: ChainableCommander, onError: (error: Error) => void): Promise<void> {
  try {
    const replies = (await pipeline.exec()) ?? [];
    const failed = replies.find(([error]) => error !== null);
    if (failed) throw failed[0];
  } catch (error) {
    onError(error as Error);
  }
}
