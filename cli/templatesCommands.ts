/**
 * `postdate templates …` (DESIGN §6, §10): store a new version from files, list, show, render with a
 * data file, and archive — straight against the table, with the same validation as the API (a
 * template that would be refused by `PUT /v1/templates/{name}` is refused here with the same
 * reasons) and the same store, whose `archive` is the one `DELETE /v1/templates/{name}` makes.
 */
import { readFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError } from 'commander';
import { templateHeadView } from '../lambdas/api/routes/templates.js';
import { createTemplateRenderer } from '../lambdas/core/templateRenderer.js';
import {
  validateTemplateName,
  validateTemplatePut,
  validateTemplateRender,
} from '../lambdas/core/templateRequests.js';
import type { TemplateHead, TemplateStore } from '../lambdas/ports/TemplateStore.js';
import { DynamoTemplateStore } from '../lambdas/store/templateStore.js';
import { CliError, EXIT, type ExitCode, NotFoundError, UsageError } from './cliErrors.js';
import {
  type CommandAction,
  type CommandContext,
  LOCAL_TENANT,
  tenantName,
  tenantOf,
} from './commandAction.js';
import { type Output, printTable } from './output.js';

export interface TemplatesDeps {
  readonly store: TemplateStore;
  readonly now: () => Date;
  readonly readText: (path: string) => Promise<string>;
}

function name(value: string): string {
  const checked = validateTemplateName(value);
  if (!checked.ok) throw new UsageError(`template name ${checked.errors[0]?.message ?? 'is invalid'}`);
  return checked.value;
}

export async function templatesPut(
  deps: TemplatesDeps,
  input: {
    name: string;
    tenant: string;
    subject: string;
    htmlFile?: string;
    textFile?: string;
    description?: string;
  },
  out: Output,
): Promise<ExitCode> {
  const body = {
    subject: input.subject,
    ...(input.htmlFile ? { html: await readFileOption(deps, '--html-file', input.htmlFile) } : {}),
    ...(input.textFile ? { text: await readFileOption(deps, '--text-file', input.textFile) } : {}),
    ...(input.description ? { description: input.description } : {}),
  };
  const parsed = await validateTemplatePut(body);
  if (!parsed.ok) throw refused(fieldErrors(parsed.errors));
  const { description, ...content } = parsed.value;
  const result = await deps.store.putVersion({
    tenant: input.tenant,
    name: name(input.name),
    content,
    description,
    now: deps.now(),
  });
  if (result.kind === 'contended')
    throw refused('other versions of this template are being stored right now; try again');
  const { name: stored, version, created_at } = result.version;
  if (out.json) out.data({ name: stored, version, created_at, unarchived: result.unarchived });
  else if (result.unarchived)
    out.line(
      `stored ${stored} version ${version}; it was archived: new enqueues may use it again (templates archive ${stored} stops them)`,
    );
  else out.line(`stored ${stored} version ${version}`);
  return EXIT.ok;
}

export async function templatesList(
  deps: TemplatesDeps,
  input: { tenant: string },
  out: Output,
): Promise<ExitCode> {
  const items: TemplateHead[] = [];
  let after: string | null = null;
  do {
    const page = await deps.store.list(input.tenant, { limit: 100, after });
    items.push(...page.items);
    after = page.next;
  } while (after !== null);
  if (out.json) {
    out.data({ items });
    return EXIT.ok;
  }
  printTable(
    out,
    [
      { header: 'NAME', value: (head: TemplateHead) => head.name },
      { header: 'LATEST', value: (head) => `v${head.latest_version}` },
      { header: 'STATE', value: (head) => (head.archived_at ? `archived ${head.archived_at}` : 'active') },
      { header: 'DESCRIPTION', value: (head) => head.description ?? '' },
    ],
    items,
    `no templates for tenant ${input.tenant}`,
  );
  return EXIT.ok;
}

export async function templatesShow(
  deps: TemplatesDeps,
  input: { name: string; tenant: string; version?: number },
  out: Output,
): Promise<ExitCode> {
  const head = await deps.store.getHead(input.tenant, name(input.name));
  if (!head) throw noTemplate(input);
  const wanted = input.version ?? head.latest_version;
  const version = await deps.store.getVersion(input.tenant, head.name, wanted);
  if (!version) throw noVersion(head.name, input.tenant, wanted);
  if (out.json) {
    out.data({ ...version, latest_version: head.latest_version, archived_at: head.archived_at });
    return EXIT.ok;
  }
  out.line(
    `${version.name} v${version.version} (latest v${head.latest_version}${head.archived_at ? ', archived' : ''})`,
  );
  out.line(`subject: ${version.subject}`);
  if (version.text !== null) out.line(`--- text\n${version.text}`);
  if (version.html !== null) out.line(`--- html\n${version.html}`);
  return EXIT.ok;
}

export async function templatesRender(
  deps: TemplatesDeps,
  input: { name: string; tenant: string; dataFile: string; version?: number },
  out: Output,
): Promise<ExitCode> {
  const source = await readFileOption(deps, '--data-file', input.dataFile);
  let data: unknown;
  try {
    data = JSON.parse(source);
  } catch {
    throw new UsageError(`--data-file ${input.dataFile} is not a JSON file`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new UsageError('--data-file must hold a JSON object');
  // The data's own limits (size, depth, finite numbers), as the render route judges them.
  const checked = validateTemplateRender({ data });
  if (!checked.ok) throw refused(fieldErrors(checked.errors));
  const head = await deps.store.getHead(input.tenant, name(input.name));
  if (!head) throw noTemplate(input);
  const renderer = createTemplateRenderer((ref) => deps.store.getVersion(ref.tenant, ref.name, ref.version));
  const version = input.version ?? head.latest_version;
  const rendered = await renderer.render(
    { tenant: input.tenant, name: head.name, version },
    checked.value.data,
  );
  if (rendered.kind === 'missing') throw noVersion(head.name, input.tenant, version);
  if (rendered.kind === 'invalid') throw refused(fieldErrors(rendered.errors));
  if (out.json) {
    out.data({ name: head.name, version, ...rendered.content });
    return EXIT.ok;
  }
  out.line(`subject: ${rendered.content.subject}`);
  if (rendered.content.text !== null) out.line(`--- text\n${rendered.content.text}`);
  if (rendered.content.html !== null) out.line(`--- html\n${rendered.content.html}`);
  return EXIT.ok;
}

/**
 * As `DELETE /v1/templates/{name}`: no new enqueue may use the template; messages already queued
 * still render from it. Idempotent as the API is: a second run keeps the first `archived_at` and
 * says so, exit 0; a name the tenant has no template of is refused (the API's 404).
 */
export async function templatesArchive(
  deps: TemplatesDeps,
  input: { name: string; tenant: string },
  out: Output,
): Promise<ExitCode> {
  const now = deps.now();
  const head = await deps.store.archive(input.tenant, name(input.name), now);
  if (!head) throw noTemplate(input);
  // The store keeps the first archive's time: any other is an archive made before this run.
  const already = head.archived_at !== now.toISOString();
  if (out.json) {
    out.data({ ...templateHeadView(head), already_archived: already });
    return EXIT.ok;
  }
  if (already) out.line(`${head.name} was already archived at ${head.archived_at}`);
  else out.line(`archived ${head.name}: no new enqueue may use it; queued messages still render`);
  return EXIT.ok;
}

/**
 * A file a flag names, read; one that cannot be read is the caller's to fix (a path moved or
 * mistyped): bad usage naming the flag, the path and why, not an unexpected error (decision 0251).
 */
async function readFileOption(deps: TemplatesDeps, flag: string, path: string): Promise<string> {
  try {
    return await deps.readText(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why =
      FILE_ERRORS[typeof code === 'string' ? code : ''] ?? (typeof code === 'string' ? code : 'unreadable');
    throw new UsageError(`${flag} ${path} cannot be read: ${why}`);
  }
}

/** Node's file errors a person meets, in words. */
const FILE_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

/** A refusal (exit 1), reported as any failed command's: the line, and with `--json` its document. */
function refused(detail: string): CliError {
  return new CliError(detail, EXIT.failed);
}

/** No template of that name: its tenant's templates are where to find the right one. */
function noTemplate(input: { name: string; tenant: string }): NotFoundError {
  return new NotFoundError(
    `no template ${input.name} for tenant ${input.tenant}`,
    `postdate templates list --tenant ${input.tenant}`,
  );
}

/** A template without that version: `show` names its latest. */
function noVersion(name: string, tenant: string, version: number): NotFoundError {
  return new NotFoundError(
    `template ${name} has no version ${version}`,
    `postdate templates show ${name} --tenant ${tenant}`,
  );
}

/** Every refused field, in one line: `/html uses a partial; /subject …`. */
function fieldErrors(errors: readonly { field: string; message: string }[]): string {
  return errors.map((error) => `${error.field} ${error.message}`).join('; ');
}

function withVersion(
  context: CommandContext,
  templateName: string,
  options: { tenant?: string; templateVersion?: number },
) {
  return {
    name: templateName,
    tenant: tenantOf(context, options.tenant),
    ...(options.templateVersion === undefined ? {} : { version: options.templateVersion }),
  };
}

/** `--template-version`'s parser: commander's own refusal, so it is bad usage (exit 2, the JSON error document). */
function positiveInteger(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value))
    throw new InvalidArgumentError('--template-version must be a whole number of at least 1');
  return Number(value);
}

/** `postdate templates put|list|show|render|archive`, with postdate.ts's action wrapper. */
export function registerTemplatesCommands(program: Command, action: CommandAction): void {
  const deps = (context: CommandContext): TemplatesDeps => ({
    store: new DynamoTemplateStore(context.target.documents, context.target.refs.tableName),
    now: context.now,
    readText: (path) => readFile(path, 'utf8'),
  });
  const templates = program
    .command('templates')
    .description('stored templates (DESIGN §10): put, list, show, render, archive');
  const tenantOption = [
    '--tenant <tenant>',
    `the tenant (default on the local stack: ${LOCAL_TENANT}; required against AWS)`,
    tenantName,
  ] as const;
  templates
    .command('put')
    .description('store a new immutable version (previous + 1)')
    .argument('<name>')
    .requiredOption('--subject <subject>', 'the subject (Handlebars)')
    .option('--html-file <path>', 'the html part (Handlebars, escaped)')
    .option('--text-file <path>', 'the text part (Handlebars)')
    .option('--description <text>', 'what the template is for')
    .option(...tenantOption)
    .action(
      action(
        async (
          context,
          templateName: string,
          options: {
            subject: string;
            htmlFile?: string;
            textFile?: string;
            description?: string;
            tenant?: string;
          },
        ) =>
          templatesPut(
            deps(context),
            { ...options, name: templateName, tenant: tenantOf(context, options.tenant) },
            context.out,
          ),
      ),
    );
  templates
    .command('list')
    .description("a tenant's templates by name")
    .option(...tenantOption)
    .action(
      action(async (context, options: { tenant?: string }) =>
        templatesList(deps(context), { tenant: tenantOf(context, options.tenant) }, context.out),
      ),
    );
  templates
    .command('show')
    .description('the latest version of a template, or --template-version N')
    .argument('<name>')
    .option('--template-version <n>', 'one version', positiveInteger)
    .option(...tenantOption)
    .action(
      action(async (context, templateName: string, options: { tenant?: string; templateVersion?: number }) =>
        templatesShow(deps(context), withVersion(context, templateName, options), context.out),
      ),
    );
  templates
    .command('render')
    .description('render a template with a JSON data file (nothing is sent)')
    .argument('<name>')
    .requiredOption('--data-file <path>', 'a JSON object: the template variables')
    .option('--template-version <n>', 'one version (default: the latest)', positiveInteger)
    .option(...tenantOption)
    .action(
      action(
        async (
          context,
          templateName: string,
          options: { tenant?: string; dataFile: string; templateVersion?: number },
        ) =>
          templatesRender(
            deps(context),
            { ...withVersion(context, templateName, options), dataFile: options.dataFile },
            context.out,
          ),
      ),
    );
  templates
    .command('archive')
    .description('no new enqueue may use the template; queued messages still render (idempotent)')
    .argument('<name>')
    .option(...tenantOption)
    .action(
      action(async (context, templateName: string, options: { tenant?: string }) =>
        templatesArchive(
          deps(context),
          { name: templateName, tenant: tenantOf(context, options.tenant) },
          context.out,
        ),
      ),
    );
}
