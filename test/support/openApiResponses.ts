/**
 * Checks an HTTP answer against the OpenAPI document, as a validating proxy would: the operation is
 * found by method and path in the document's own paths (a literal segment beats a `{param}`); its
 * status must be declared (exactly, or as `4XX`/`5XX`/`default`); the content type must be one the
 * response declares and the body must match its schema (ajv, JSON Schema 2020-12 with formats); every
 * required header must be sent and every header sent must be declared, but for the generic ones
 * (content-type, cache-control, …). An answer to a path or method the document does not list must be
 * a 404 or 405 with a problem or a gateway error body.
 *
 * And a webhook's POST the other way round, as a receiver generated from the document would check
 * it (`webhookRequestChecker`): the entry of `webhooks` named by the event's `type`, its required
 * headers and its body schema.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = Record<string, unknown>;

export interface ObservedRequest {
  readonly method: string;
  /** The decoded path, without the query. */
  readonly path: string;
}

export interface ObservedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | number | boolean | undefined>>;
  /** The body as sent (text), or undefined for none. */
  readonly body: string | undefined;
}

/** Headers any answer may carry without the document naming them. */
const GENERIC_HEADERS = new Set([
  'content-type',
  'content-length',
  'cache-control',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'apigw-requestid',
]);

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

// ajv-formats is CommonJS: its default export is the plugin function under ESM interop.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

export type ResponseCheck = (request: ObservedRequest, response: ObservedResponse) => string[];

/** A checker for one document; it returns what is wrong with an answer (empty when it matches). */
export function responseChecker(document: object): ResponseCheck {
  const doc = JSON.parse(JSON.stringify(document)) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json', undefined, false);
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  const templates = Object.keys(paths).map((template) => ({ template, segments: template.split('/') }));
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();

  function validatorAt(pointer: string) {
    let validate = validators.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
      validators.set(pointer, validate);
    }
    return validate;
  }

  function findPath(path: string): string | undefined {
    const segments = path.split('/');
    const candidates = templates.filter(
      ({ segments: pattern }) =>
        pattern.length === segments.length &&
        pattern.every((part, i) =>
          /^\{\w+\}$/.test(part) ? (segments[i] ?? '') !== '' : part === segments[i],
        ),
    );
    const literals = (pattern: string[]) => pattern.filter((part) => !part.startsWith('{')).length;
    return candidates.sort((a, b) => literals(b.segments) - literals(a.segments))[0]?.template;
  }

  return function checkResponse(request, response) {
    const problems: string[] = [];
    const headers = Object.fromEntries(
      Object.entries(response.headers)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => [name.toLowerCase(), String(value)]),
    );
    const mediaType = (headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const template = findPath(request.path);
    const method = request.method.toLowerCase();
    const operation =
      template !== undefined && METHODS.includes(method)
        ? (paths[template]?.[method] as Json | undefined)
        : undefined;
    const label = `${request.method.toUpperCase()} ${request.path} → ${response.status}`;

    if (!operation) {
      // Not an operation of the document: only "no such route" may answer.
      if (response.status !== 404 && response.status !== 405)
        problems.push(`${label}: no operation in the document, and not a 404/405`);
      const pointer =
        mediaType === 'application/problem+json'
          ? '/components/schemas/Problem'
          : mediaType === 'application/json'
            ? '/components/schemas/GatewayError'
            : null;
      if (pointer === null) problems.push(`${label}: content type ${mediaType || '(none)'} for no route`);
      else problems.push(...bodyProblems(label, pointer, response.body));
      for (const name of Object.keys(headers)) {
        if (!GENERIC_HEADERS.has(name) && !(response.status === 405 && name === 'allow'))
          problems.push(`${label}: header ${name} is not declared`);
      }
      return problems;
    }

    const responses = (operation.responses ?? {}) as Record<string, Json>;
    const statusKey = [String(response.status), `${String(response.status)[0]}XX`, 'default'].find(
      (key) => responses[key] !== undefined,
    );
    if (statusKey === undefined) {
      problems.push(`${label}: status ${response.status} is not declared for ${method} ${template}`);
      return problems;
    }
    const declared = responses[statusKey] as Json;
    const base = `/paths/${pointerSegment(template as string)}/${method}/responses/${statusKey}`;

    const content = (declared.content ?? {}) as Record<string, Json>;
    if (Object.keys(content).length === 0) {
      if (response.body !== undefined && response.body !== '')
        problems.push(`${label}: a body where the document declares none`);
    } else if (content[mediaType] === undefined) {
      problems.push(
        `${label}: content type ${mediaType || '(none)'} not among ${Object.keys(content).join(', ')}`,
      );
    } else if (content[mediaType]?.schema !== undefined) {
      problems.push(
        ...bodyProblems(label, `${base}/content/${pointerSegment(mediaType)}/schema`, response.body),
      );
    }

    const declaredHeaders = Object.fromEntries(
      Object.entries((declared.headers ?? {}) as Record<string, Json>).map(([name, header]) => [
        name.toLowerCase(),
        { name, header },
      ]),
    );
    for (const [lower, { name, header }] of Object.entries(declaredHeaders)) {
      const value = headers[lower];
      if (value === undefined) {
        if (header.required === true) problems.push(`${label}: required header ${name} is missing`);
        continue;
      }
      if (header.schema !== undefined) {
        const validate = validatorAt(`${base}/headers/${pointerSegment(name)}/schema`);
        if (!validate(value)) problems.push(`${label}: header ${name}: ${ajv.errorsText(validate.errors)}`);
      }
    }
    for (const name of Object.keys(headers)) {
      if (!GENERIC_HEADERS.has(name) && declaredHeaders[name] === undefined)
        problems.push(`${label}: header ${name} is sent but not declared`);
    }
    return problems;
  };

  function bodyProblems(label: string, pointer: string, body: string | undefined): string[] {
    let value: unknown;
    try {
      value = JSON.parse(body ?? '');
    } catch {
      return [`${label}: the body is not JSON`];
    }
    const validate = validatorAt(pointer);
    if (validate(value)) return [];
    return [`${label}: body does not match ${pointer}: ${ajv.errorsText(validate.errors)}`];
  }
}

/** What a webhook receiver was POSTed: its headers and its body as sent. */
export interface ObservedWebhookRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export type WebhookRequestCheck = (request: ObservedWebhookRequest) => string[];

/**
 * A checker of webhook POSTs for one document; it returns what is wrong with one (empty when it
 * matches): the document's `webhooks` entry named by the body's `type` must exist with a `post`, every
 * header parameter it requires must be sent and match its schema, the body must match the request
 * body's schema, and a 2xx answer must be documented.
 */
export function webhookRequestChecker(document: object): WebhookRequestCheck {
  const doc = JSON.parse(JSON.stringify(document)) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json', undefined, false);
  const webhooks = (doc.webhooks ?? {}) as Record<string, Json>;

  return function checkWebhookRequest(request) {
    let event: unknown;
    try {
      event = JSON.parse(request.body);
    } catch {
      return ['the webhook body is not JSON'];
    }
    const type = String((event as { type?: unknown } | null)?.type);
    const post = webhooks[type]?.post as Json | undefined;
    if (post === undefined) return [`${type}: no webhook entry with a post in the document`];
    const base = `/webhooks/${pointerSegment(type)}/post`;
    const problems: string[] = [];
    const validateAt = (pointer: string, value: unknown, what: string) => {
      const validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
      if (!validate(value)) problems.push(`${type}: ${what}: ${ajv.errorsText(validate.errors)}`);
    };
    const parameters = (post.parameters ?? []) as { in: string; name: string; required?: boolean }[];
    parameters.forEach((parameter, index) => {
      if (parameter.in !== 'header') return;
      const value = request.headers[parameter.name.toLowerCase()];
      if (value === undefined) {
        if (parameter.required === true)
          problems.push(`${type}: required header ${parameter.name} is missing`);
        return;
      }
      validateAt(`${base}/parameters/${index}/schema`, String(value), `header ${parameter.name}`);
    });
    const content = ((post.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>;
    if (content['application/json']?.schema === undefined) problems.push(`${type}: no application/json body`);
    else validateAt(`${base}/requestBody/content/application~1json/schema`, event, 'body');
    const responses = Object.keys((post.responses ?? {}) as Json);
    if (!responses.some((status) => /^2(\d\d|XX)$/.test(status)))
      problems.push(`${type}: no 2xx answer documented`);
    return problems;
  };
}

/** A JSON Pointer segment (RFC 6901), URI-encoded for a `$ref`. */
function pointerSegment(segment: string): string {
  return encodeURIComponent(segment.replaceAll('~', '~0').replaceAll('/', '~1'));
}

/** Throws, listing what is wrong, when an answer does not match the document. */
export function assertDocumentedResponse(
  check: ResponseCheck,
  request: ObservedRequest,
  response: ObservedResponse,
): void {
  const problems = check(request, response);
  if (problems.length > 0) {
    throw new Error(`The answer does not match the OpenAPI document:\n- ${problems.join('\n- ')}`);
  }
}
