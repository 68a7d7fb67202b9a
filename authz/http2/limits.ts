/**
 * What one HTTP/2 connection to authz may cost, whatever the peer sends. Each bound is
 * the answer to a published attack (docs/edge.md, "What the server refuses"); the tests
 * in test/authz-http2-attacks.test.ts hold each one. The values sit near what nghttp2 and
 * Go's x/net/http2 use, and well above what Envoy's own codec ever needs for Checks.
 */
export interface Http2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS: streams open or whose handler still runs (CVE-2019-9515/9517). */
  readonly maxConcurrentStreams: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: a stream's receive window; above the largest message. */
  readonly streamWindow: number;
  /** The connection's receive window: request bytes held here and not yet consumed never exceed it. */
  readonly connectionWindow: number;
  /** The largest gRPC message a call may send (a Check is a few KiB, ~64 KiB at most). */
  readonly maxMessageBytes: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE (decoded: name + value + 32 per field). */
  readonly maxHeaderListBytes: number;
  /** A header block's raw bytes, and its CONTINUATION frames: past either, ENHANCE_YOUR_CALM (CVE-2024-27316). */
  readonly maxHeaderBlockBytes: number;
  readonly maxContinuationFrames: number;
  /** Entries in one SETTINGS frame (nghttp2's NGHTTP2_DEFAULT_MAX_SETTINGS). */
  readonly maxSettingsEntries: number;
  /** Streams the peer resets (or this side resets for the peer's errors) per second, burst included (CVE-2023-44487). */
  readonly maxResetsPerSecond: number;
  /**
   * Frames that carry no request work: PING, SETTINGS, PRIORITY, empty DATA and CONTINUATION,
   * unknown types, WINDOW_UPDATE, per second (CVE-2019-9512, 9514, 9516, 9518).
   */
  readonly maxControlFramesPerSecond: number;
  /** Bytes this side may have waiting for a peer that does not read before it is cut off (CVE-2019-9512/9515). */
  readonly maxPendingOutputBytes: number;
  /** From accept to the client preface and its SETTINGS. */
  readonly prefaceTimeoutMs: number;
  /** From a HEADERS frame to the END_HEADERS that completes its block. */
  readonly headerBlockTimeoutMs: number;
  /** A connection with no open stream for this long is sent GOAWAY and closed. */
  readonly idleTimeoutMs: number;
  /** Connections open at once per server; more are closed at accept. */
  readonly maxConnections: number;
}

export const DEFAULT_HTTP2_LIMITS: Http2Limits = Object.freeze({
  maxConcurrentStreams: 100,
  streamWindow: 128 << 10,
  connectionWindow: 1 << 20,
  maxMessageBytes: 64 << 10,
  maxHeaderListBytes: 64 << 10,
  maxHeaderBlockBytes: 64 << 10,
  maxContinuationFrames: 16,
  maxSettingsEntries: 32,
  maxResetsPerSecond: 1_000,
  maxControlFramesPerSecond: 1_000,
  maxPendingOutputBytes: 1 << 20,
  prefaceTimeoutMs: 10_000,
  headerBlockTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  maxConnections: 1_000,
});
