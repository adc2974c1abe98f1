import { randomBytes } from 'node:crypto';
import type {
  APIGatewayEventRequestContextV2,
  APIGatewayProxyEventV2,
  APIGatewayRequestAuthorizerEventV2,
} from 'aws-lambda';
import { type RouteMatch, safeDecode } from './routes.js';

/**
 * Pure translation between an HTTP request/response and API Gateway HTTP API payload format 2.0
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
 */

/** What the front end read from the socket. */
export interface RawHttpRequest {
  readonly method: string;
  /** Path and query exactly as sent, e.g. `/v1/messages?status=sent`. */
  readonly url: string;
  /** Node's `rawHeaders`: name, value, name, value… in arrival order. */
  readonly rawHeaders: readonly string[];
  readonly body: Buffer;
  readonly sourceIp: string;
  readonly httpVersion: string;
}

/** Fixed identity of the local "API": what API Gateway would fill from the deployment. */
export interface ApiIdentity {
  readonly accountId: string;
  readonly apiId: string;
  readonly region: string;
  readonly stage: string;
}

export const LOCAL_API: ApiIdentity = {
  accountId: '000000000000',
  apiId: 'local',
  region: 'us-east-1',
  stage: '$default',
};

/** An id shaped like API Gateway's (`JKJaXmPLvHcESHA=`). */
export function newRequestId(): string {
  return randomBytes(11).toString('base64');
}

/** Builds the payload 2.0 event for a matched route. */
export function toHttpApiEvent(
  request: RawHttpRequest,
  match: RouteMatch,
  options: { requestId: string; now: Date; api?: ApiIdentity },
): APIGatewayProxyEventV2 {
  const api = options.api ?? LOCAL_API;
  const questionMark = request.url.indexOf('?');
  const encodedPath = questionMark < 0 ? request.url : request.url.slice(0, questionMark);
  const rawQueryString = questionMark < 0 ? '' : request.url.slice(questionMark + 1);
  const { headers, cookies } = combineHeaders(request.rawHeaders);
  // HTTP APIs deliver the path URL-decoded (REST APIs and function URLs do not).
  const rawPath = safeDecode(encodedPath);
  const domainName = headers.host ?? 'localhost';
  const requestContext: APIGatewayEventRequestContextV2 = {
    accountId: api.accountId,
    apiId: api.apiId,
    domainName,
    domainPrefix: domainName.split('.')[0] ?? domainName,
    http: {
      method: request.method.toUpperCase(),
      path: rawPath,
      protocol: `HTTP/${request.httpVersion}`,
      sourceIp: request.sourceIp,
      userAgent: headers['user-agent'] ?? '',
    },
    requestId: options.requestId,
    routeKey: match.route.routeKey,
    stage: api.stage,
    time: apiGatewayTime(options.now),
    timeEpoch: options.now.getTime(),
  };
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: match.route.routeKey,
    rawPath,
    rawQueryString,
    headers,
    requestContext,
    isBase64Encoded: false,
  };
  if (cookies.length > 0) event.cookies = cookies;
  const query = queryParameters(rawQueryString);
  if (query) event.queryStringParameters = query;
  if (match.pathParameters) event.pathParameters = { ...match.pathParameters };
  if (request.body.length > 0) {
    const asText = isTextual(headers['content-type']) ? utf8OrUndefined(request.body) : undefined;
    event.body = asText ?? request.body.toString('base64');
    event.isBase64Encoded = asText === undefined;
  }
  return event;
}

/** The payload 2.0 event of a Lambda authorizer (REQUEST type) for the same request. */
export function toAuthorizerEvent(
  event: APIGatewayProxyEventV2,
  identitySource: readonly string[],
  api: ApiIdentity = LOCAL_API,
): APIGatewayRequestAuthorizerEventV2 {
  const [method = 'GET', path = '/'] = event.routeKey.split(' ');
  const authorizerEvent: APIGatewayRequestAuthorizerEventV2 = {
    version: '2.0',
    type: 'REQUEST',
    routeArn: `arn:aws:execute-api:${api.region}:${api.accountId}:${api.apiId}/${api.stage}/${method}${path}`,
    identitySource: [...identitySource],
    routeKey: event.routeKey,
    rawPath: event.rawPath,
    rawQueryString: event.rawQueryString,
    cookies: event.cookies ?? [],
    headers: event.headers,
    requestContext: event.requestContext,
  };
  if (event.queryStringParameters) authorizerEvent.queryStringParameters = event.queryStringParameters;
  if (event.pathParameters) authorizerEvent.pathParameters = event.pathParameters;
  return authorizerEvent;
}

/** The HTTP answer API Gateway gives back to the client. */
export interface HttpAnswer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly cookies: readonly string[];
  readonly body: Buffer;
}

/** API Gateway's own error answers: `{"message": …}` as JSON. */
export function gatewayError(statusCode: number, message: string, requestId: string): HttpAnswer {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'apigw-requestid': requestId },
    cookies: [],
    body: Buffer.from(JSON.stringify({ message })),
  };
}

/**
 * Maps what the function returned to the HTTP answer, as payload 2.0 does: an object with a
 * `statusCode` is a structured response; anything else that is JSON is sent as a 200
 * `application/json` body. A structured response with an invalid status is a 500, as in AWS.
 */
export function fromHttpApiResult(result: unknown, requestId: string): HttpAnswer {
  if (isRecord(result) && 'statusCode' in result) {
    const { statusCode, headers, cookies, body, isBase64Encoded } = result;
    if (
      typeof statusCode !== 'number' ||
      !Number.isInteger(statusCode) ||
      statusCode < 100 ||
      statusCode > 599 ||
      (body !== undefined && body !== null && typeof body !== 'string')
    ) {
      return gatewayError(500, 'Internal Server Error', requestId);
    }
    const answerHeaders: Record<string, string> = {};
    if (isRecord(headers)) {
      for (const [name, value] of Object.entries(headers)) {
        if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
          answerHeaders[name.toLowerCase()] = String(value);
        }
      }
    }
    answerHeaders['apigw-requestid'] = requestId;
    const text = typeof body === 'string' ? body : '';
    return {
      statusCode,
      headers: answerHeaders,
      cookies: Array.isArray(cookies) ? cookies.filter((cookie) => typeof cookie === 'string') : [],
      body: isBase64Encoded === true ? Buffer.from(text, 'base64') : Buffer.from(text),
    };
  }
  const body = typeof result === 'string' ? result : (JSON.stringify(result) ?? '');
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json', 'apigw-requestid': requestId },
    cookies: [],
    body: Buffer.from(body),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Lower-cased names, duplicates joined with commas; every Cookie header goes to `cookies`. */
function combineHeaders(rawHeaders: readonly string[]): {
  headers: Record<string, string>;
  cookies: string[];
} {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = (rawHeaders[index] ?? '').toLowerCase();
    const value = rawHeaders[index + 1] ?? '';
    if (name === 'cookie') {
      cookies.push(
        ...value
          .split(';')
          .map((cookie) => cookie.trim())
          .filter((cookie) => cookie !== ''),
      );
      continue;
    }
    const existing = headers[name];
    headers[name] = existing === undefined ? value : `${existing},${value}`;
  }
  return { headers, cookies };
}

/** Decoded query parameters, duplicates joined with commas; absent when there is no query. */
function queryParameters(rawQueryString: string): Record<string, string> | undefined {
  if (rawQueryString === '') return undefined;
  const parameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    const existing = parameters[name];
    parameters[name] = existing === undefined ? value : `${existing},${value}`;
  }
  return Object.keys(parameters).length > 0 ? parameters : undefined;
}

function isTextual(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/xml' ||
    type.endsWith('+xml') ||
    type === 'application/x-www-form-urlencoded' ||
    type === 'application/javascript'
  );
}

function utf8OrUndefined(body: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return undefined;
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `12/Mar/2020:19:03:58 +0000`, API Gateway's `requestContext.time`. */
function apiGatewayTime(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(now.getUTCDate())}/${MONTHS[now.getUTCMonth()]}/${now.getUTCFullYear()}:${pad(
    now.getUTCHours(),
  )}:${pad(now.getUTCMinutes())}:${pad(now.getUTCSeconds())} +0000`;
}
