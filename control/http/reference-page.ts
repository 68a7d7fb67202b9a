import { createHash } from 'node:crypto';
import type Koa from 'koa';

type Json = Record<string, any>;

/** Where the control API serves the reference page: outside /v1, beside the document it is made from. */
export const REFERENCE_PATH = '/docs';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;display:flex}
nav{width:17rem;flex:none;height:100vh;overflow:auto;position:sticky;top:0;background:#f4f5f8;padding:1rem;box-sizing:border-box;font-size:13px}
nav a{display:block;color:#1d2330;text-decoration:none;padding:1px 0}nav h4{margin:.8rem 0 .2rem}
main{padding:1.5rem 2.5rem;max-width:60rem}section.op{border-top:1px solid #dde;padding:.5rem 0 1rem}
.m{display:inline-block;min-width:3.6rem;font:bold 12px monospace;text-transform:uppercase;color:#fff;background:#556;border-radius:3px;padding:1px 4px;text-align:center}
.get{background:#2a7}.post{background:#27c}.patch{background:#c82}.delete{background:#c33}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f5f8;padding:.6rem;overflow:auto;max-height:24rem}
table{border-collapse:collapse}td,th{border:1px solid #dde;padding:2px 6px;text-align:left;vertical-align:top}`;

/** The page allows its one stylesheet and nothing else: no script, no fetch, no image, nothing from another origin. */
const HEADERS = {
  'Content-Security-Policy': `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const escapeHtml = (text: unknown) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Descriptions are plain sentences with `code` in backticks. */
const prose = (text: unknown) => (text ? `<p>${escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>').replace(/\n\n/g, '</p><p>')}</p>` : '');
const json = (value: unknown) => `<pre>${escapeHtml(JSON.stringify(value, null, 2))}</pre>`;

/**
 * The API reference as one static HTML page rendered from the OpenAPI document: every
 * operation under its tag, with its parameters, an example of its body and its responses.
 * It loads nothing, so it works offline and behind any firewall.
 */
export function renderReference(document: Json): string {
  const resolve = (node: Json | undefined): Json | undefined =>
    typeof node?.$ref === 'string' ? node.$ref.slice(2).split('/').reduce((at: Json, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document) : node;
  const exampleOf = (schema: Json | undefined): unknown => (schema?.examples ?? resolve(schema)?.examples)?.[0];
  const server = document.servers?.[0]?.url ?? '';
  const operations = Object.entries(document.paths as Json).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] as Json })),
  );

  const renderOperation = ({ path, method, operation }: (typeof operations)[number]) => {
    const parameters = (operation.parameters as Json[]).map((p) => resolve(p)!);
    const body = operation.requestBody?.content?.['application/json'];
    const responses = Object.entries(operation.responses as Json).map(([status, response]) => {
      const resolved = resolve(response)!;
      const [mediaType, content] = Object.entries((resolved.content ?? {}) as Json)[0] ?? [];
      const example = /^2/.test(status) ? exampleOf(content?.schema) : undefined;
      return `<tr><td><code>${escapeHtml(status)}</code></td><td>${escapeHtml(resolved.description)}${mediaType ? ` <small>(${escapeHtml(mediaType)})</small>` : ''}${example === undefined ? '' : json(example)}</td></tr>`;
    });
    return `<section class="op" id="${escapeHtml(operation.operationId)}">
<h3>${escapeHtml(operation.summary)}</h3>
<p><span class="m ${method}">${method}</span> <code>${escapeHtml(server + path)}</code> · <code>${escapeHtml(operation.operationId)}</code> · ${operation.security?.length === 0 ? 'public' : 'bearer token'}</p>
${prose(operation.description)}
${parameters.length ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>description</th></tr>${parameters.map((p) => `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${escapeHtml(p.description ?? p.schema?.description ?? '')}</td></tr>`).join('')}</table>` : ''}
${body ? `<h4>Request body</h4>${json(exampleOf(body.schema) ?? {})}` : ''}
<h4>Responses</h4><table>${responses.join('')}</table>
</section>`;
  };

  const tags = (document.tags as Json[]).map((tag) => ({ name: tag.name as string, description: tag.description as string, operations: operations.filter(({ operation }) => operation.tags?.[0] === tag.name) }));
  const anchor = (name: string) => `tag-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(document.info.title)} ${escapeHtml(document.info.version)}</title><style>${STYLE}</style></head>
<body><nav><strong>${escapeHtml(document.info.title)}</strong>
${tags.map((tag) => `<h4><a href="#${anchor(tag.name)}">${escapeHtml(tag.name)}</a></h4>${tag.operations.map(({ operation }) => `<a href="#${escapeHtml(operation.operationId)}">${escapeHtml(operation.summary)}</a>`).join('')}`).join('\n')}
</nav><main>
<h1>${escapeHtml(document.info.title)} <small>${escapeHtml(document.info.version)}</small></h1>
${prose(document.info.description)}
<p>Server: <code>${escapeHtml(server)}</code>. The OpenAPI document: <a href="${escapeHtml(server)}/openapi.json"><code>${escapeHtml(server)}/openapi.json</code></a>.</p>
${tags.map((tag) => `<h2 id="${anchor(tag.name)}">${escapeHtml(tag.name)}</h2>${prose(tag.description)}${tag.operations.map(renderOperation).join('\n')}`).join('\n')}
</main></body></html>
`;
}

/** Answers GET and HEAD /docs with the page, rendered once from the document on first use. */
export function serveReference(document: () => Json): Koa.Middleware {
  let page: string | undefined;
  return async (ctx, next) => {
    if (ctx.path !== REFERENCE_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    page ??= renderReference(document());
    ctx.set(HEADERS);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  };
}
