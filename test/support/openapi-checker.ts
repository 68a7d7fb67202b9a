import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats ships CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** What the checker is shown of one exchange: the request line and the response as a client got it. */
export interface Exchange {
  method: string;
  /** Under the server URL (/v1), query string allowed: `/agents/agt_1?page=2`. */
  path: string;
  status: number;
  headers: Headers;
  /** The body as text; empty when there was none. */
  text: string;
}

/** Response headers a client acts on: each one present must be declared for the status it came with. */
const DECLARED_HEADERS = ['ETag', 'Retry-After', 'WWW-Authenticate', 'X-Request-Id', 'Allow', 'Location'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const DOCUMENT_ID = 'openapi.json';

type Json = Record<string, any>;

/**
 * Holds every response to the OpenAPI document the server serves: the operation exists, the
 * status is declared for it (`default` stands for the 500 only), each header a client acts
 * on is declared, the media type is declared and a JSON body validates against its schema.
 * A path the document does not have must be answered 404, a method its path lacks 405.
 */
export class OpenApiChecker {
  private readonly ajv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly templates: { template: string; segments: string[] }[];

  constructor(private readonly document: Json) {
    // strict off: the document is OpenAPI around JSON Schemas, with keywords ajv does not know.
    this.ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
    this.ajv.addSchema({ ...document, $id: DOCUMENT_ID });
    this.templates = Object.keys(document.paths)
      .map((template) => ({ template, segments: template.split('/') }))
      // A literal segment wins over a parameter, as the router's order would have it for these paths.
      .sort((a, b) => paramCount(a.template) - paramCount(b.template));
  }

  /** Throws an Error saying what the document lacks or what the response broke. */
  check(exchange: Exchange): void {
    const problems = this.problems(exchange);
    if (problems.length > 0) {
      throw new Error(`${exchange.method} ${exchange.path} answered ${exchange.status}, not as the OpenAPI document says:\n  - ${problems.join('\n  - ')}`);
    }
  }

  problems(exchange: Exchange): string[] {
    const path = exchange.path.split('?')[0]!.replace(/(.)\/$/, '$1');
    const template = this.templates.find(({ segments }) => matches(segments, path.split('/')))?.template;
    const method = exchange.method.toLowerCase() === 'head' ? 'get' : exchange.method.toLowerCase();
    if (!template) {
      return exchange.status === 404 ? this.errorBodyProblems(exchange) : [`no path of the document matches ${path}, so only 404 is expected`];
    }
    const item = this.document.paths[template] as Json;
    const operation = item[method] as Json | undefined;
    if (!operation) {
      if (exchange.status !== 405) return [`${template} has no ${method.toUpperCase()} operation, so only 405 is expected`];
      const declaring = METHODS.find((other) => item[other]?.responses?.['405']);
      if (!declaring) return [`no operation of ${template} declares 405`];
      return this.responseProblems(exchange, this.resolve(item[declaring].responses['405']), pointer('paths', template, declaring, 'responses', '405'));
    }
    const responses = operation.responses as Json;
    const key = String(exchange.status) in responses ? String(exchange.status) : exchange.status === 500 && responses.default ? 'default' : undefined;
    if (!key) return [`status ${exchange.status} is not declared for ${method.toUpperCase()} ${template} (declared: ${Object.keys(responses).join(', ')})`];
    return this.responseProblems(exchange, this.resolve(responses[key]), pointer('paths', template, method, 'responses', key));
  }

  private responseProblems(exchange: Exchange, response: Json, where: string): string[] {
    const problems: string[] = [];
    const declared = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
    for (const name of DECLARED_HEADERS) {
      if (exchange.headers.has(name) && !declared.has(name.toLowerCase())) problems.push(`header ${name} is sent but not declared at ${where}`);
    }
    if (exchange.text === '') return problems;
    const mediaType = (exchange.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const content = response.content as Json | undefined;
    if (!content?.[mediaType]) {
      problems.push(`a ${mediaType || 'untyped'} body is sent but ${where} declares ${content ? Object.keys(content).join(', ') : 'no content'}`);
      return problems;
    }
    if (mediaType !== 'application/json' || !content[mediaType].schema) return problems;
    const validate = this.validator(`${where}/content/${escape(mediaType)}/schema`);
    if (!validate(JSON.parse(exchange.text))) {
      problems.push(`the body does not match ${where}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body' })}; body: ${exchange.text.slice(0, 500)}`);
    }
    return problems;
  }

  /**
   * What the document's examples get wrong: every JSON request body and 2xx response body
   * must show at least one example (on its schema, or on the component it references),
   * and every example in the document must validate against the schema it illustrates.
   */
  exampleProblems(): string[] {
    const problems: string[] = [];
    for (const [template, item] of Object.entries(this.document.paths as Json)) {
      for (const method of METHODS.filter((m) => item[m])) {
        const operation = item[method] as Json;
        const bodies: [string, Json | undefined][] = [[pointer('paths', template, method, 'requestBody'), operation.requestBody]];
        for (const [status, response] of Object.entries(operation.responses as Json)) {
          if (/^2/.test(status)) bodies.push([pointer('paths', template, method, 'responses', status), this.resolve(response as Json)]);
        }
        for (const [where, body] of bodies) {
          for (const [mediaType, content] of Object.entries((body?.content ?? {}) as Json)) {
            if (!this.examplesOf(content.schema).length) problems.push(`${where}/content/${escape(mediaType)} has no example`);
          }
        }
      }
    }
    this.visitSchemas(this.document, '#', (schema, at) => {
      (schema.examples as unknown[]).forEach((example, i) => {
        const validate = this.validator(at);
        if (!validate(example)) problems.push(`${at}/examples/${i} does not match its schema: ${this.ajv.errorsText(validate.errors, { dataVar: 'example' })}`);
      });
    });
    return problems;
  }

  private examplesOf(schema: Json | undefined): unknown[] {
    if (!schema) return [];
    return (schema.examples as unknown[] | undefined) ?? (typeof schema.$ref === 'string' ? this.examplesOf(this.resolve(schema)) : []);
  }

  /** Calls `found` with every schema that has `examples` and the pointer to it. */
  private visitSchemas(node: unknown, at: string, found: (schema: Json, at: string) => void): void {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray((node as Json).examples) && /\/schema$|\/components\/schemas\/[^/]+$/.test(at)) found(node as Json, at);
    for (const [key, value] of Object.entries(node as Json)) {
      if (key !== 'examples') this.visitSchemas(value, `${at}/${escape(key)}`, found);
    }
  }

  /** An answer to a path the document lacks is the catalogue's error body. */
  private errorBodyProblems(exchange: Exchange): string[] {
    const validate = this.validator('#/components/schemas/Error');
    return exchange.text && validate(JSON.parse(exchange.text)) ? [] : [`the 404 body is not an Error: ${exchange.text.slice(0, 200)}`];
  }

  private validator(at: string): ValidateFunction {
    let validate = this.validators.get(at);
    if (!validate) {
      const fragment = at.slice(2).split('/').map((part) => encodeURIComponent(part)).join('/');
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#/${fragment}` });
      this.validators.set(at, validate);
    }
    return validate;
  }

  private resolve(node: Json): Json {
    if (typeof node.$ref !== 'string') return node;
    return node.$ref.slice(2).split('/').map(unescape).reduce((at: Json, part: string) => at[part], this.document);
  }
}

/** A JSON pointer (RFC 6901) into the document, as `#/a/b~1c`. */
const escape = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');
const unescape = (part: string) => part.replace(/~1/g, '/').replace(/~0/g, '~');
const pointer = (...parts: string[]) => `#/${parts.map(escape).join('/')}`;

const paramCount = (template: string) => (template.match(/\{/g) ?? []).length;

function matches(template: string[], concrete: string[]): boolean {
  return template.length === concrete.length && template.every((part, i) => (part.startsWith('{') ? concrete[i] !== '' : part === concrete[i]));
}
