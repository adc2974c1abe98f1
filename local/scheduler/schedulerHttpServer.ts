import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { SchedulerApiError, type SchedulerService } from './schedulerService.js';
import {
  THROTTLING_MESSAGE,
  type ThrottleableOperation,
  type ThrottleFault,
  ThrottleSettingError,
} from './throttleFault.js';

/** The emulator's own route, beside the API's: the throttling fault (throttleFault.ts). */
export const THROTTLE_FAULT_PATH = '/local-faults/throttle';

/**
 * The Scheduler REST-JSON wire protocol (as `@aws-sdk/client-scheduler` speaks it): operations by
 * method and path, bodies in JSON with epoch-second timestamps, errors as status +
 * `x-amzn-errortype` header + `{"Message": ...}`. While `throttle` refuses an operation, its
 * requests are answered 429 `ThrottlingException` and change nothing.
 */
export function createSchedulerHttpServer(service: SchedulerService, throttle: ThrottleFault): Server {
  return createServer((request, response) => {
    handle(service, throttle, request, response).catch((error: unknown) => {
      if (error instanceof SchedulerApiError) {
        sendError(response, error.status, error.type, error.message);
      } else if (error instanceof ThrottleSettingError) {
        sendError(response, 400, 'ValidationException', error.message);
      } else {
        sendError(response, 500, 'InternalServerException', error instanceof Error ? error.message : 'error');
      }
    });
  });
}

async function handle(
  service: SchedulerService,
  throttle: ThrottleFault,
  request: IncomingMessage,
  response: ServerResponse,
) {
  const url = new URL(request.url ?? '/', 'http://scheduler.local');
  const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const query = url.searchParams;
  const method = request.method ?? 'GET';
  const [collection, name] = segments;
  const optional = (key: string) => query.get(key) ?? undefined;

  if (url.pathname === THROTTLE_FAULT_PATH) {
    if (method === 'PUT') return sendJson(response, throttle.set(await readJson(request)));
    if (method === 'DELETE') return sendJson(response, throttle.clear());
    if (method === 'GET') return sendJson(response, throttle.view());
  }
  const operation = operationOf(method, collection, segments.length);
  if (operation !== undefined && throttle.refuses(operation)) {
    return sendError(response, 429, 'ThrottlingException', THROTTLING_MESSAGE);
  }
  if (collection === 'schedules' && segments.length === 2 && name !== undefined) {
    if (method === 'POST') return sendJson(response, service.createSchedule(name, await readJson(request)));
    if (method === 'PUT') return sendJson(response, service.updateSchedule(name, await readJson(request)));
    if (method === 'GET') return sendJson(response, service.getSchedule(name, optional('groupName')));
    if (method === 'DELETE') return sendJson(response, service.deleteSchedule(name, optional('groupName')));
  }
  if (collection === 'schedules' && segments.length === 1 && method === 'GET') {
    const maxResults = optional('MaxResults');
    return sendJson(
      response,
      service.listSchedules({
        groupName: optional('ScheduleGroup'),
        namePrefix: optional('NamePrefix'),
        state: optional('State'),
        nextToken: optional('NextToken'),
        maxResults: maxResults === undefined ? undefined : Number(maxResults),
      }),
    );
  }
  if (collection === 'schedule-groups' && segments.length === 2 && name !== undefined) {
    if (method === 'POST') {
      await readJson(request);
      return sendJson(response, service.createScheduleGroup(name));
    }
    if (method === 'GET') return sendJson(response, service.getScheduleGroup(name));
  }
  throw new SchedulerApiError(
    'ValidationException',
    `The local Scheduler emulator does not implement ${method} ${url.pathname}.`,
  );
}

/** The schedule operation a request is, by method and path (those the throttling fault can refuse). */
function operationOf(
  method: string,
  collection: string | undefined,
  depth: number,
): ThrottleableOperation | undefined {
  if (collection !== 'schedules') return undefined;
  if (depth === 1) return method === 'GET' ? 'ListSchedules' : undefined;
  if (depth !== 2) return undefined;
  const byMethod: Record<string, ThrottleableOperation> = {
    POST: 'CreateSchedule',
    PUT: 'UpdateSchedule',
    DELETE: 'DeleteSchedule',
    GET: 'GetSchedule',
  };
  return byMethod[method];
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // fall through to the validation error
  }
  throw new SchedulerApiError('ValidationException', 'The request body is not a JSON object.');
}

function sendJson(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  });
  response.end(text);
}

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  const text = JSON.stringify({ Message: message });
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-errortype': type,
    'x-amzn-requestid': randomUUID(),
  });
  response.end(text);
}
