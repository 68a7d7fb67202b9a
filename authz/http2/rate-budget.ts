/**
 * A token bucket over wall-clock seconds: `capacity` events at once, refilled at `capacity`
 * a second. What a connection spends on frames that do no request work (resets, PINGs,
 * SETTINGS, empty frames) comes out of one of these; an empty bucket ends the connection
 * with ENHANCE_YOUR_CALM, as nghttp2's stream_reset_ratelim and Go's x/net/http2 do.
 */
export class RateBudget {
  private tokens: number;
  private refilledAt: number;

  constructor(
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = capacity;
    this.refilledAt = now();
  }

  /** Takes one event out of the bucket; false when the peer has spent more than its share. */
  spend(): boolean {
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    const now = this.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.refilledAt) / 1_000) * this.capacity);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
