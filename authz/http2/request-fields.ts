/**
 * RFC 9113 §8.2-8.3: what makes a request's header section malformed. A malformed request
 * is a stream error of type PROTOCOL_ERROR (§8.1.1); the caller resets the stream. One
 * object checks one header block field by field as HPACK decodes it, so a Check's headers
 * are walked once.
 */

/** §8.3.1: the request pseudo-header fields; any other, a response's `:status` included, is malformed. */
const REQUEST_PSEUDO_HEADERS = new Set([':method', ':scheme', ':authority', ':path']);

/** §8.2.2: "connection-specific header fields"; `te` is allowed with the value "trailers" only. */
const CONNECTION_SPECIFIC = new Set(['connection', 'proxy-connection', 'keep-alive', 'transfer-encoding', 'upgrade']);

/**
 * §8.2.1 with RFC 9110 §5.1: a field name is a token (tchar), and HTTP/2 forbids uppercase;
 * 1 marks a byte allowed in a regular field name.
 */
const NAME_BYTE = new Uint8Array(256);
for (const char of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") NAME_BYTE[char.charCodeAt(0)] = 1;

/** One header block's fields, checked as they are decoded. */
export class RequestFieldCheck {
  /** Why the block is malformed, or undefined while it is not. */
  problem: string | undefined;
  private regularSeen = false;
  private readonly pseudoSeen = new Set<string>();

  /** `trailers`: a second block on the stream (§8.1), which carries no pseudo-header (§8.1). */
  constructor(private readonly trailers: boolean) {}

  field(name: string, value: string): void {
    if (this.problem !== undefined) return;
    if (name.length === 0) return this.malformed('an empty field name');
    if (name.charCodeAt(0) === 0x3a /* : */) {
      // §8.3: pseudo-headers only those defined for requests, once each, before every regular field, never in trailers.
      if (this.trailers) return this.malformed(`pseudo-header ${name} in trailers`);
      if (!REQUEST_PSEUDO_HEADERS.has(name)) return this.malformed(`pseudo-header ${name} is not a request's`);
      if (this.regularSeen) return this.malformed(`pseudo-header ${name} after a regular field`);
      if (this.pseudoSeen.has(name)) return this.malformed(`pseudo-header ${name} twice`);
      if (name === ':path' && value.length === 0) return this.malformed('an empty :path');
      this.pseudoSeen.add(name);
    } else {
      this.regularSeen = true;
      for (let i = 0; i < name.length; i += 1) {
        if (NAME_BYTE[name.charCodeAt(i)] !== 1) return this.malformed(`field name ${JSON.stringify(name)} has a character HTTP/2 forbids`);
      }
      if (CONNECTION_SPECIFIC.has(name)) return this.malformed(`connection-specific field ${name}`);
      if (name === 'te' && value !== 'trailers') return this.malformed('te other than "trailers"');
      if (name === 'content-length' && !/^[0-9]{1,15}$/.test(value)) return this.malformed('a content-length that is not a number');
    }
    // §8.2.1: no NUL, CR or LF anywhere in a value, and no whitespace at its start or end.
    for (let i = 0; i < value.length; i += 1) {
      const code = value.charCodeAt(i);
      if (code === 0x00 || code === 0x0a || code === 0x0d) return this.malformed(`field ${name} has NUL, CR or LF in its value`);
    }
    if (value.length > 0 && (isWhitespace(value.charCodeAt(0)) || isWhitespace(value.charCodeAt(value.length - 1)))) {
      return this.malformed(`field ${name} has whitespace at the start or end of its value`);
    }
  }

  /** Called once the block is decoded: §8.3.1's required pseudo-headers. */
  complete(): string | undefined {
    if (this.problem !== undefined || this.trailers) return this.problem;
    for (const required of [':method', ':scheme', ':path']) {
      if (!this.pseudoSeen.has(required)) return (this.problem = `no ${required}`);
    }
    return undefined;
  }

  private malformed(problem: string): void {
    this.problem = problem;
  }
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09;
}
