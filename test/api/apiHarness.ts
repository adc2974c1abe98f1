import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { type ApiEvent, type ApiResult, createApiHandler } from '../../lambdas/api/createApiHandler.js';
import type { ApiStore } from '../../lambdas/ports/ApiStore.js';
import type { AttachmentStore } from '../../lambdas/ports/AttachmentStore.js';
import type { DispatchQueue } from '../../lambdas/ports/DispatchQueue.js';
import type { Log } from '../../lambdas/ports/Log.js';
import { DynamoApiStore } from '../../lambdas/store/apiStore.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { buildOpenApiDocument } from '../../lib/openapi/openApiDocument.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import {
  assertDocumentedResponse,
  type ResponseCheck,
  responseChecker,
} from '../support/openApiResponses.js';
import { apiEvent } from './events.js';

export interface LogLine {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly attributes: Record<string, unknown>;
}

/** A clock the test moves by hand. */
export function testClock(start = '2026-11-29T18:00:00.000Z') {
  let current = new Date(start).getTime();
  return {
    now: () => new Date(current),
    advance: (ms: number) => {
      current += ms;
    },
    set: (iso: string) => {
      current = new Date(iso).getTime();
    },
  };
}

let documentCheck: ResponseCheck | undefined;

/** The checker of the document the API serves, built once per test file. */
export function documentedResponseCheck(): ResponseCheck {
  documentCheck ??= responseChecker(buildOpenApiDocument());
  return documentCheck;
}

/**
 * The api handler wrapped so that every answer is checked against the OpenAPI document: an answer
 * the document does not describe throws, failing the test that received it.
 */
export function documentedHandler(
  handle: (event: ApiEvent) => Promise<ApiResult>,
  check: ResponseCheck = documentedResponseCheck(),
): (event: ApiEvent) => Promise<ApiResult> {
  return async function documentedHandle(event) {
    const result = await handle(event);
    assertDocumentedResponse(
      check,
      { method: event.requestContext?.http?.method ?? 'GET', path: event.rawPath ?? '/' },
      {
        status: result.statusCode ?? 200,
        headers: (result.headers ?? {}) as Record<string, string>,
        body: result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64').toString() : result.body,
      },
    );
    return result;
  };
}

/**
 * The api handler on a fresh DynamoDB Local table, with a clock and captured logs. Every answer it
 * gives is checked against the OpenAPI document (`documentedHandler`).
 */
export async function apiHarness(
  options: {
    logger?: Log;
    allowedFrom?: string[];
    wrapStore?: (store: ApiStore) => ApiStore;
    sleep?: (ms: number) => Promise<void>;
    immediateCopies?: DispatchQueue;
    attachments?: AttachmentStore;
    inlineAttachmentMaxKb?: number;
    maxMessageMb?: number;
  } = {},
) {
  const { tableName, streamArn } = await freshTable('api');
  const documents = documentClient();
  const store = new DynamoApiStore(documents, tableName);
  const clock = testClock();
  const logs: LogLine[] = [];
  const capture: Log = {
    info: (message, attributes) => logs.push({ level: 'info', message, attributes }),
    warn: (message, attributes) => logs.push({ level: 'warn', message, attributes }),
    error: (message, attributes) => logs.push({ level: 'error', message, attributes }),
  };
  const handle = documentedHandler(
    createApiHandler({
      store: options.wrapStore ? options.wrapStore(store) : store,
      templates: new DynamoTemplateStore(documents, tableName, clock.now),
      config: {
        allowedFrom: options.allowedFrom ?? ['*@example.com'],
        defaultFrom: 'postdate@example.com',
        maxHorizonDays: 400,
        maxAttempts: 8,
        retentionDays: 30,
        ...(options.inlineAttachmentMaxKb === undefined
          ? {}
          : { inlineAttachmentMaxKb: options.inlineAttachmentMaxKb }),
        ...(options.maxMessageMb === undefined ? {} : { maxMessageMb: options.maxMessageMb }),
      },
      now: clock.now,
      random: Math.random,
      logger: options.logger ?? capture,
      sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      ...(options.immediateCopies ? { immediateCopies: options.immediateCopies } : {}),
      ...(options.attachments ? { attachments: options.attachments } : {}),
    }),
  );
  const call = async (event: ApiEvent) => {
    const result = await handle(event);
    const headers = (result.headers ?? {}) as Record<string, string>;
    return {
      status: result.statusCode ?? 0,
      headers,
      json: result.body ? (JSON.parse(result.body) as Record<string, unknown>) : {},
    };
  };
  const scanAll = async () => {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await documents.send(
        new ScanCommand({ TableName: tableName, ExclusiveStartKey: startKey }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  };
  return { tableName, streamArn, documents, store, clock, logs, handle, call, scanAll };
}

/**
 * Uploads a PDF as a client does: reserves it for `tenant` through the API, then PUTs `bytes` to
 * the upload URL it answered. Returns the attachment's id.
 */
export async function uploadThroughApi(
  api: Awaited<ReturnType<typeof apiHarness>>,
  tenant: string,
  filename: string,
  bytes: Buffer,
): Promise<string> {
  const reserved = await api.call(
    apiEvent({
      method: 'POST',
      path: '/v1/attachments',
      body: { filename, content_type: 'application/pdf', size: bytes.length },
      tenant,
    }),
  );
  expect(reserved.status).toBe(201);
  const put = await fetch(String(reserved.json.upload_url), {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': 'application/pdf' },
  });
  expect(put.status).toBe(200);
  return String(reserved.json.id);
}
