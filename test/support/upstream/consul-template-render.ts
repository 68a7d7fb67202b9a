import { MarshalerError, marshalMarshalerOutput, marshalString } from './go-json.js';
import { quote } from './go-strconv-quote.js';
import { goBytes } from './go-utf8.js';

/**
 * consul-template v0.42.1 (the version Nomad's go.mod pins) rendering exactly the template
 * forms this project writes, through Go's text/template:
 *
 *   {{ with nomadVar "path" }} … {{ end }}
 *   {{ range .Tuples }}{{ .K }}={{ .V | toJSON }}…{{ end }}
 *   {{ .KEY | toJSON }}   {{ .KEY.Value | toJSON }}
 *   and the `{{- ` / ` -}}` trim markers.
 *
 * Anything else throws TemplateUnsupported: this port judges only what it was ported for.
 * Sources: consul-template template/template.go (`Execute`, `funcMap`), template/funcs.go
 * (`toJSON`), template/nomad_funcs.go (`nomadVariableItemsFunc`),
 * dependency/nomad_var_structs.go (NomadVarItems, NomadVarItem); golang/go
 * src/text/template/parse/lex.go (delimiters, trim markers) and exec.go (`evalField`).
 */

/** A Variable's Items by path, or undefined while it does not exist. */
export type VariableLookup = (path: string) => Readonly<Record<string, string>> | undefined;

export interface Rendered {
  readonly output: Buffer;
  /**
   * Variables that do not exist (yet). consul-template marks them missing and Nomad does not
   * write the file (nor start the task) until they exist: `output` is not final then.
   */
  readonly missing: readonly string[];
}

/** The template uses a form this port does not know. */
export class TemplateUnsupported extends Error {
  constructor(message: string) {
    super(`consul-template port: ${message}`);
    this.name = 'TemplateUnsupported';
  }
}

/**
 * Rendering failed as consul-template's would (template.go `Execute`: "execute: …"). Its
 * message lacks the `template: :LINE:COL: executing "" at <toJSON>: ` that text/template
 * puts in front of the cause.
 */
export class TemplateExecuteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateExecuteError';
  }
}

export function renderTemplate(text: string, lookup: VariableLookup): Rendered {
  const missing: string[] = [];
  const out: Buffer[] = [];
  execute(parse(lex(text)), { kind: 'nil' }, { lookup, missing, out });
  return { output: Buffer.concat(out), missing };
}

// ---- lexing (text/template/parse/lex.go) ----

type Item = { kind: 'text'; text: string } | { kind: 'action'; tokens: string[] };

/** lex.go `spaceChars`: what a trim marker removes, and what may sit beside the `-`. */
const SPACE = /[ \t\r\n]/;
const trimRight = (s: string) => s.replace(/[ \t\r\n]+$/, '');
const trimLeft = (s: string) => s.replace(/^[ \t\r\n]+/, '');

function lex(text: string): Item[] {
  const items: Item[] = [];
  let rest = text;
  let trimNext = false;
  for (;;) {
    const open = rest.indexOf('{{');
    let chunk = open < 0 ? rest : rest.slice(0, open);
    if (trimNext) chunk = trimLeft(chunk);
    // lex.go `hasLeftTrimMarker`: "{{-" followed by a space character trims the text before.
    const leftTrim = open >= 0 && rest[open + 2] === '-' && SPACE.test(rest[open + 3] ?? '');
    if (leftTrim) chunk = trimRight(chunk);
    if (chunk) items.push({ kind: 'text', text: chunk });
    if (open < 0) return items;
    if (rest.startsWith('{{/*', open) || rest.startsWith('{{- /*', open)) throw new TemplateUnsupported('comments are not ported');
    const bodyStart = open + (leftTrim ? 4 : 2);
    const close = closingDelimiter(rest, bodyStart);
    let body = rest.slice(bodyStart, close);
    // lex.go `hasRightTrimMarker`: a space character then "-" before "}}" trims the text after.
    trimNext = body.length >= 2 && body.endsWith('-') && SPACE.test(body[body.length - 2]!);
    if (trimNext) body = body.slice(0, -2);
    items.push({ kind: 'action', tokens: tokenize(body) });
    rest = rest.slice(close + 2);
  }
}

/** The "}}" that ends the action, skipping string literals (a path could hold "}}"). */
function closingDelimiter(text: string, from: number): number {
  let inString = false;
  for (let i = from; i < text.length; i++) {
    if (text[i] === '"') inString = !inString;
    else if (!inString && text.startsWith('}}', i)) return i;
  }
  throw new TemplateUnsupported('unclosed action');
}

const TOKEN = /\s*("[^"\\]*"|\||(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_][A-Za-z0-9_]*)/y;

/** An action's words: identifiers, field chains (.A.B), plain string literals, `|`. */
function tokenize(body: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < body.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(body);
    if (!match) {
      if (/^\s*$/.test(body.slice(at))) break;
      throw new TemplateUnsupported(`action {{${body}}}: not a form this port knows`);
    }
    tokens.push(match[1]!);
  }
  if (tokens.length === 0) throw new TemplateUnsupported('empty action');
  return tokens;
}

// ---- parsing: the control structures and pipelines we write ----

type Node =
  | { kind: 'text'; bytes: Buffer }
  | { kind: 'print'; fields: string[]; toJSON: boolean }
  | { kind: 'withNomadVar'; path: string; body: Node[] }
  | { kind: 'range'; fields: string[]; body: Node[] };

function parse(items: Item[]): Node[] {
  const stack: { node: Node | null; body: Node[] }[] = [{ node: null, body: [] }];
  const top = () => stack[stack.length - 1]!;
  for (const item of items) {
    if (item.kind === 'text') {
      top().body.push({ kind: 'text', bytes: goBytes(item.text) });
      continue;
    }
    const [word, ...args] = item.tokens;
    const form = item.tokens.join(' ');
    if (word === 'end') {
      if (args.length > 0 || stack.length === 1) throw new TemplateUnsupported(`{{ ${form} }}: unexpected`);
      const done = stack.pop()!;
      top().body.push(done.node!);
    } else if (word === 'with') {
      const [fn, literal] = args;
      if (fn !== 'nomadVar' || args.length !== 2 || !literal?.startsWith('"')) throw new TemplateUnsupported(`{{ ${form} }}: only {{ with nomadVar "path" }} is ported`);
      const path = literal.slice(1, -1);
      // dependency.NewNVGetQuery reads "path@namespace.region": only a plain path is ported.
      if (path === '' || path.includes('@')) throw new TemplateUnsupported(`{{ ${form} }}: only a plain Variable path is ported`);
      const node: Node = { kind: 'withNomadVar', path, body: [] };
      stack.push({ node, body: node.body });
    } else if (word === 'range') {
      if (args.length !== 1 || !args[0]!.startsWith('.')) throw new TemplateUnsupported(`{{ ${form} }}: only {{ range .Field }} is ported`);
      const node: Node = { kind: 'range', fields: fieldsOf(args[0]!), body: [] };
      stack.push({ node, body: node.body });
    } else if (word?.startsWith('.') && (args.length === 0 || (args.length === 2 && args[0] === '|' && args[1] === 'toJSON'))) {
      top().body.push({ kind: 'print', fields: fieldsOf(word), toJSON: args.length === 2 });
    } else {
      throw new TemplateUnsupported(`{{ ${form} }}: not a form this port knows`);
    }
  }
  if (stack.length !== 1) throw new TemplateUnsupported('a block is not closed with {{ end }}');
  return top().body;
}

const fieldsOf = (chain: string) => chain.split('.').slice(1);

// ---- execution (text/template exec.go, over the values consul-template hands it) ----

type Value =
  | { kind: 'nil' }
  /** dependency.NomadVarItems: map[string]NomadVarItem. */
  | { kind: 'items'; items: Map<string, Buffer> }
  /** NomadVarItems.Tuples(): []struct{ K, V string }. */
  | { kind: 'tuples'; list: { K: Buffer; V: Buffer }[] }
  | { kind: 'tuple'; K: Buffer; V: Buffer }
  /** dependency.NomadVarItem{Key, Value string}. */
  | { kind: 'item'; key: Buffer; value: Buffer }
  | { kind: 'string'; bytes: Buffer };

interface Run {
  lookup: VariableLookup;
  missing: string[];
  out: Buffer[];
}

/** NomadVarItems' methods (nomad_var_structs.go): exec.go `evalField` tries a method before a map key. */
const ITEMS_METHODS = new Set(['Keys', 'Values', 'Tuples', 'Metadata', 'Parent', 'ItemsMap']);

function execute(nodes: Node[], dot: Value, run: Run): void {
  for (const node of nodes) {
    switch (node.kind) {
      case 'text':
        run.out.push(node.bytes);
        break;
      case 'withNomadVar': {
        // nomad_funcs.go `nomadVariableItemsFunc`: a Variable not yet known is recorded as
        // missing and reads as nil, so `with` skips its body.
        const items = run.lookup(node.path);
        if (!items) {
          run.missing.push(node.path);
          break;
        }
        const map = new Map(Object.entries(items).map(([key, value]) => [key, goBytes(value)]));
        // An empty map is false to `with` (exec.go `isTrue`); Nomad refuses empty Variables anyway.
        if (map.size > 0) execute(node.body, { kind: 'items', items: map }, run);
        break;
      }
      case 'range': {
        const list = field(dot, node.fields);
        if (list.kind !== 'tuples') throw new TemplateUnsupported(`range over ${list.kind} is not ported`);
        for (const tuple of list.list) execute(node.body, { kind: 'tuple', ...tuple }, run);
        break;
      }
      case 'print': {
        const value = field(dot, node.fields);
        run.out.push(node.toJSON ? toJSON(value) : printed(value));
        break;
      }
    }
  }
}

/** exec.go `evalField`, for the receivers consul-template gives us. */
function field(dot: Value, names: string[]): Value {
  let value = dot;
  for (const name of names) {
    if (value.kind === 'items') {
      if (name === 'Tuples') {
        // nomad_var_structs.go `Tuples`: key-sorted (sort.Strings, byte order).
        const items = value.items;
        const keys = [...items.keys()].sort((a, b) => Buffer.compare(goBytes(a), goBytes(b)));
        value = { kind: 'tuples', list: keys.map((key) => ({ K: goBytes(key), V: items.get(key)! })) };
      } else if (ITEMS_METHODS.has(name)) {
        throw new TemplateUnsupported(`.${name} on a nomadVar result is not ported`);
      } else {
        // A map key. template.go `Execute` sets missingkey=zero unless error_on_missing_key:
        // an absent key is the zero NomadVarItem (empty Key and Value).
        const stored = value.items.get(name);
        value = { kind: 'item', key: stored ? goBytes(name) : Buffer.alloc(0), value: stored ?? Buffer.alloc(0) };
      }
    } else if (value.kind === 'tuple' && (name === 'K' || name === 'V')) {
      value = { kind: 'string', bytes: value[name] };
    } else if (value.kind === 'item' && (name === 'Key' || name === 'Value')) {
      value = { kind: 'string', bytes: name === 'Key' ? value.key : value.value };
    } else {
      throw new TemplateUnsupported(`.${name} on ${value.kind} is not ported`);
    }
  }
  return value;
}

/** What `{{ pipeline }}` prints: a string as its bytes (exec.go `printValue` → fmt.Fprint). */
function printed(value: Value): Buffer {
  if (value.kind === 'string') return value.bytes;
  throw new TemplateUnsupported(`printing ${value.kind} is not ported`);
}

/**
 * funcs.go `toJSON`: json.Marshal, then bytes.TrimSpace (a no-op here: a JSON string begins
 * and ends with a quote). A NomadVarItem marshals through its MarshalJSON,
 * `fmt.Sprintf("%q", v.Value)`, which json.Marshal must then accept as JSON.
 */
function toJSON(value: Value): Buffer {
  if (value.kind === 'string') return marshalString(value.bytes);
  if (value.kind === 'item') {
    try {
      return marshalMarshalerOutput('dependency.NomadVarItem', quote(value.value));
    } catch (error) {
      if (error instanceof MarshalerError) throw new TemplateExecuteError(`execute: error calling toJSON: toJSON: ${error.message}`);
      throw error;
    }
  }
  throw new TemplateUnsupported(`toJSON of ${value.kind} is not ported`);
}
