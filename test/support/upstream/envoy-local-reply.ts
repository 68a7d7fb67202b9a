/**
 * How Envoy rewrites a local reply with `local_reply_config`, ported for the filters our
 * envoy.yaml uses, so a test can ask "what does the caller get?" on Envoy's terms:
 *
 * - source/common/local_reply/local_reply.cc, `LocalReplyImpl::rewrite`: mappers are
 *   tried in order and the FIRST whose filter matches rewrites the status and body; the
 *   rest are not consulted.
 * - source/common/access_log/access_log_impl.cc: `AndFilter` (every sub-filter),
 *   `OrFilter` (any), `ResponseFlagFilter` (any of the listed flags is set; an empty list
 *   means any flag at all), `StatusCodeFilter` → `ComparisonFilter::compareAgainstValue`
 *   (EQ, GE, LE against the runtime value, whose default is `default_value`).
 *
 * Any other filter kind throws: the port must never guess what Envoy would do.
 */
type Node = Record<string, any>;

export interface LocalReply {
  status: number;
  body: string;
  /** Response flags set on the stream, by their short names (UAEX, UF, UH …). */
  flags: string[];
}

export function matches(filter: Node, reply: LocalReply): boolean {
  const [kind, spec] = Object.entries(filter)[0] as [string, Node];
  switch (kind) {
    case 'and_filter':
      return (spec.filters as Node[]).every((inner) => matches(inner, reply));
    case 'or_filter':
      return (spec.filters as Node[]).some((inner) => matches(inner, reply));
    case 'response_flag_filter': {
      const flags = (spec.flags as string[] | undefined) ?? [];
      return flags.length === 0 ? reply.flags.length > 0 : flags.some((flag) => reply.flags.includes(flag));
    }
    case 'status_code_filter': {
      const { op, value } = spec.comparison as { op?: string; value: { default_value: number } };
      const expected = Number(value.default_value);
      if ((op ?? 'EQ') === 'EQ') return reply.status === expected;
      if (op === 'GE') return reply.status >= expected;
      if (op === 'LE') return reply.status <= expected;
      throw new Error(`comparison op ${op} is not ported`);
    }
    default:
      throw new Error(`access log filter ${kind} is not ported`);
  }
}

/** What the caller receives for a local reply, after `local_reply_config`'s mappers. */
export function rewrite(localReplyConfig: Node | undefined, reply: LocalReply): { status: number; body: string } {
  for (const mapper of (localReplyConfig?.mappers ?? []) as Node[]) {
    if (!matches(mapper.filter, reply)) continue;
    return {
      status: mapper.status_code !== undefined ? Number(mapper.status_code) : reply.status,
      body: mapper.body?.inline_string !== undefined ? String(mapper.body.inline_string) : reply.body,
    };
  }
  return { status: reply.status, body: reply.body };
}
