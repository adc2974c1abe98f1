/**
 * `postdate attachments upload FILE`: a large attachment through `POST /v1/attachments` (DESIGN §13)
 * — the file declared (its name, its type given or derived from the extension, its size), its bytes
 * PUT to the pre-signed URL with exactly that type and size — then its id printed, for an enqueue's
 * `attachments: [{"attachment_id": …}]`. With `--json`: `{id, filename, content_type, size,
 * expires_at}`. The id is good for a day; an upload no message references is then deleted.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import type { PostdateClient } from '../lambdas/client/index.js';
import { createPostdateClient } from '../lambdas/client/index.js';
import { contentTypeFor } from '../lambdas/core/attachments.js';
import { CliError, EXIT, UsageError } from './cliErrors.js';
import type { CommandAction } from './commandAction.js';
import type { Output } from './output.js';
import { apiOf } from './target.js';

export interface UploadOptions {
  readonly path: string;
  /** The media type; derived from the file's extension when absent. */
  readonly contentType?: string;
  /** The name the recipient sees; the file's own name when absent. */
  readonly filename?: string;
}

export interface UploadReport {
  readonly id: string;
  readonly filename: string;
  readonly content_type: string;
  readonly size: number;
  readonly expires_at: string;
}

export async function attachmentsUpload(
  client: Pick<PostdateClient, 'createAttachment'>,
  options: UploadOptions,
  out: Output,
  put: (url: string, init: RequestInit) => Promise<Response> = (url, init) => globalThis.fetch(url, init),
): Promise<UploadReport> {
  const file = await stat(options.path).catch(() => undefined);
  if (!file?.isFile()) throw new UsageError(`${options.path} is not a file`);
  const filename = options.filename ?? basename(options.path);
  const contentType = contentTypeFor(filename, options.contentType);
  const reserved = await client.createAttachment({ filename, content_type: contentType, size: file.size });
  // The whole file in memory: at most what fits a message (POSTDATE_MAX_MESSAGE_MB, base64).
  const bytes = await readFile(options.path);
  const answer = await put(reserved.upload_url, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': contentType },
  });
  if (!answer.ok) {
    throw new CliError(`the upload was refused (${answer.status}); nothing is attached`, EXIT.failed);
  }
  const report = {
    id: reserved.id,
    filename,
    content_type: contentType,
    size: file.size,
    expires_at: reserved.expires_at,
  };
  if (out.json) out.data(report);
  else {
    out.line(report.id);
    out.warn(`${filename} (${contentType}, ${file.size} bytes) uploaded; reference it within a day`);
  }
  return report;
}

export function registerAttachmentsCommands(program: Command, action: CommandAction): void {
  const group = program
    .command('attachments')
    .description('large attachments, uploaded before the enqueue that references them (DESIGN §13)');
  group
    .command('upload')
    .description('upload a file through POST /v1/attachments and print its id')
    .argument('<file>')
    .option('--type <media-type>', 'its content type (default: from the extension)')
    .option('--name <filename>', 'the name the recipient sees (default: the file’s own)')
    .option(
      '--api-url <url>',
      "the API's base URL (env POSTDATE_API_URL; --stack's ApiUrl; the local stack's)",
    )
    .option('--api-key <key>', 'an API key of the tenant (env POSTDATE_API_KEY)')
    .action(
      action(
        async (
          context,
          path: string,
          options: { type?: string; name?: string; apiUrl?: string; apiKey?: string },
        ) => {
          await attachmentsUpload(
            createPostdateClient(apiOf(context.target, options)),
            {
              path,
              ...(options.type === undefined ? {} : { contentType: options.type }),
              ...(options.name === undefined ? {} : { filename: options.name }),
            },
            context.out,
          );
          return EXIT.ok;
        },
      ),
    );
}
