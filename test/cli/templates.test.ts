/**
 * `postdate templates put|list|show|render` against DynamoDB Local: the commands the CLI wires, with
 * files read as the CLI reads them and output captured as a person (or `--json`) would see it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/cliErrors.js';
import type { Output } from '../../cli/output.js';
import { buildProgram } from '../../cli/postdate.js';
import {
  type TemplatesDeps,
  templatesArchive,
  templatesList,
  templatesPut,
  templatesRender,
  templatesShow,
} from '../../cli/templatesCommands.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { apiHarness } from '../api/apiHarness.js';
import { enqueueEvent } from '../api/events.js';
import { documentClient, emulatorEnv, freshTable } from '../support/awsLocal.js';
import { runMain } from './cliFixtures.js';

function capture(json = false) {
  const lines: string[] = [];
  const warnings: string[] = [];
  const data: unknown[] = [];
  const out: Output = {
    json,
    colour: false,
    interactive: false,
    line: (text) => lines.push(text),
    data: (value) => data.push(value),
    warn: (text) => warnings.push(text),
    progress: () => {},
  };
  return { out, lines, warnings, data };
}

describe('postdate templates', () => {
  let deps: TemplatesDeps;
  let tableName: string;
  const files: Record<string, string> = {
    'welcome.html': '<p>Hi {{name}}</p>',
    'welcome.txt': 'Hi {{name}}',
    'bad.html': '{{> footer}}',
    'data.json': '{"name": "<Ada>"}',
    'empty.json': '{}',
    'object.json': '{"name": {"first": "Ada"}}',
    'huge.json': JSON.stringify({ name: 'x'.repeat(70 * 1024) }),
    'infinite.json': '{"name": "Ada", "order": {"total": 1e400}}',
  };
  beforeAll(async () => {
    ({ tableName } = await freshTable('cli-templates'));
    deps = {
      store: new DynamoTemplateStore(documentClient(), tableName),
      now: () => new Date('2026-12-01T12:00:00.000Z'),
      readText: async (path) => {
        const text = files[path];
        if (text === undefined) throw new Error(`no file ${path}`);
        return text;
      },
    };
  });

  it('puts versions from files, lists, shows and renders them', async () => {
    const put = capture();
    const input = {
      name: 'welcome',
      tenant: 'local',
      subject: 'Hello {{name}}',
      htmlFile: 'welcome.html',
      textFile: 'welcome.txt',
    };
    expect(await templatesPut(deps, input, put.out)).toBe(EXIT.ok);
    expect(await templatesPut(deps, { ...input, description: 'v2' }, put.out)).toBe(EXIT.ok);
    expect(put.lines).toEqual(['stored welcome version 1', 'stored welcome version 2']);

    const list = capture();
    await templatesList(deps, { tenant: 'local' }, list.out);
    // A table with a header row, as every other list command prints (keys, webhooks, suppressions).
    expect(list.lines).toEqual(['NAME     LATEST  STATE   DESCRIPTION', 'welcome  v2      active  v2']);

    const show = capture(true);
    expect(await templatesShow(deps, { name: 'welcome', tenant: 'local', version: 1 }, show.out)).toBe(
      EXIT.ok,
    );
    expect(show.data[0]).toMatchObject({
      name: 'welcome',
      version: 1,
      latest_version: 2,
      html: '<p>Hi {{name}}</p>',
    });

    const render = capture(true);
    expect(
      await templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'data.json' }, render.out),
    ).toBe(EXIT.ok);
    expect(render.data[0]).toEqual({
      name: 'welcome',
      version: 2,
      subject: 'Hello <Ada>',
      text: 'Hi <Ada>',
      html: '<p>Hi &lt;Ada&gt;</p>',
    });
  });

  it('refuses what the API refuses, with its reasons, and names a missing or unprintable variable', async () => {
    await expect(
      templatesPut(deps, { name: 'bad', tenant: 'local', subject: 'x', htmlFile: 'bad.html' }, capture().out),
    ).rejects.toMatchObject({
      exitCode: EXIT.failed,
      message: expect.stringContaining('/html uses a partial'),
    });
    await expect(
      templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'empty.json' }, capture().out),
    ).rejects.toMatchObject({ exitCode: EXIT.failed, message: expect.stringContaining('lacks `name`') });
    await expect(
      templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'object.json' }, capture().out),
    ).rejects.toMatchObject({
      exitCode: EXIT.failed,
      message: expect.stringContaining('`name` is an object, which the subject template prints'),
    });
    // The data's own limits, as POST /v1/templates/{name}/render judges them (DESIGN §10, decision 0156).
    await expect(
      templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'huge.json' }, capture().out),
    ).rejects.toMatchObject({
      exitCode: EXIT.failed,
      message: expect.stringContaining('/data must be at most'),
    });
    await expect(
      templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'infinite.json' }, capture().out),
    ).rejects.toMatchObject({
      exitCode: EXIT.failed,
      message: expect.stringContaining('/data/order/total must be a finite number'),
    });
    // What the operator gets from the entry point: the reasons on stderr, the document, exit 1.
    const html = join(mkdtempSync(join(tmpdir(), 'postdate-templates-')), 'bad.html');
    writeFileSync(html, files['bad.html'] ?? '');
    const refused = await postdate([
      ...['--json', '--table', tableName, 'templates', 'put', 'bad', '--subject', 'x'],
      ...['--html-file', html, '--tenant', 'local'],
    ]);
    expect(refused.code).toBe(EXIT.failed);
    expect(refused.stderr).toContain('postdate: /html uses a partial');
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error: { type: 'urn:postdate:cli:failed', exit_code: EXIT.failed },
    });
    await expect(templatesShow(deps, { name: 'nope', tenant: 'local' }, capture().out)).rejects.toMatchObject(
      {
        name: 'NotFoundError',
        exitCode: EXIT.notFound,
      },
    );
  }, 60_000);

  it('archives: an enqueue naming the template is then refused as the API refuses it; again, it says already archived', async () => {
    // DESIGN §3, §10: archiving stops new enqueues only; a second DELETE answers 200 (idempotent).
    const api = await apiHarness();
    const archiveDeps: TemplatesDeps = {
      ...deps,
      store: new DynamoTemplateStore(api.documents, api.tableName),
      now: api.clock.now,
    };
    const put = { name: 'receipt', tenant: 'acme', subject: 'Receipt for {{name}}', textFile: 'welcome.txt' };
    expect(await templatesPut(archiveDeps, put, capture().out)).toBe(EXIT.ok);

    const archived = capture();
    expect(await templatesArchive(archiveDeps, { name: 'receipt', tenant: 'acme' }, archived.out)).toBe(
      EXIT.ok,
    );
    expect(archived.lines.join('\n')).toMatch(/^archived receipt/);
    const enqueue = await api.call(
      enqueueEvent(
        {
          to: ['ada@example.com'],
          from: 'ops@example.com',
          template: { name: 'receipt' },
          data: { name: 'Ada' },
        },
        { key: 'after-archive' },
      ),
    );
    expect(enqueue.status).toBe(422);
    expect(enqueue.json.errors).toEqual([
      { field: '/template/name', message: 'is archived: no new message may use it' },
    ]);

    const first = (await archiveDeps.store.getHead('acme', 'receipt'))?.archived_at;
    api.clock.advance(60_000);
    const again = capture(true);
    expect(await templatesArchive(archiveDeps, { name: 'receipt', tenant: 'acme' }, again.out)).toBe(EXIT.ok);
    expect(again.data[0]).toMatchObject({ name: 'receipt', archived_at: first, already_archived: true });
    const againText = capture();
    await templatesArchive(archiveDeps, { name: 'receipt', tenant: 'acme' }, againText.out);
    expect(againText.lines.join('\n')).toContain(`already archived at ${first}`);
    // Still readable: queued messages still render from it.
    expect(await templatesShow(archiveDeps, { name: 'receipt', tenant: 'acme' }, capture().out)).toBe(
      EXIT.ok,
    );
  });

  it('says when a put brings an archived template back into use, in words and in --json (decision 0026, 0251)', async () => {
    // A weekly edit of a template someone archived makes new enqueues use it again: the one who
    // runs the put is told, not left to find out from the mail.
    const put = { name: 'seasonal', tenant: 'acme', subject: 'Sale {{name}}', textFile: 'welcome.txt' };
    expect(await templatesPut(deps, put, capture().out)).toBe(EXIT.ok);
    const first = capture(true);
    await templatesPut(deps, put, first.out);
    expect(first.data[0]).toMatchObject({ version: 2, unarchived: false });
    await templatesArchive(deps, { name: 'seasonal', tenant: 'acme' }, capture().out);
    const back = capture();
    expect(await templatesPut(deps, put, back.out)).toBe(EXIT.ok);
    expect(back.lines.join('\n')).toBe(
      'stored seasonal version 3; it was archived: new enqueues may use it again (templates archive seasonal stops them)',
    );
    await templatesArchive(deps, { name: 'seasonal', tenant: 'acme' }, capture().out);
    const backJson = capture(true);
    await templatesPut(deps, put, backJson.out);
    expect(backJson.data[0]).toMatchObject({ name: 'seasonal', version: 4, unarchived: true });
  });

  it('archive of a name the tenant has no template of is not found, as the API answers 404', async () => {
    await expect(
      templatesArchive(deps, { name: 'nope', tenant: 'local' }, capture().out),
    ).rejects.toMatchObject({
      name: 'NotFoundError',
      exitCode: EXIT.notFound,
      message: expect.stringContaining('no template nope'),
    });
    // What the operator gets from the entry point: the line on stderr, the document, exit 4.
    const none = await postdate([
      '--json',
      '--table',
      tableName,
      'templates',
      'archive',
      'nope',
      '--tenant',
      'local',
    ]);
    expect(none.code).toBe(EXIT.notFound);
    expect(none.stderr).toContain('postdate: no template nope');
    expect(JSON.parse(none.stdout)).toMatchObject({ error: { exit_code: EXIT.notFound } });
    expect(await deps.store.getHead('local', 'nope')).toBeUndefined();
  }, 60_000);
});

/**
 * The real entry, the CLI's main with its argv, in this process (`runMain`), against DynamoDB Local;
 * never rejects. The bin as a process is test/cli/entry.test.ts's.
 */
const postdate = (args: string[]) => runMain(args, emulatorEnv());

describe('postdate templates, through the entry point', () => {
  it('against AWS asks for --tenant rather than working on the local stack’s tenant', async () => {
    // DESIGN §3: a template belongs to one tenant; `local` is only the local stack's.
    const { tableName } = await freshTable('cli-templates-aws');
    const store = new DynamoTemplateStore(documentClient(), tableName);
    const aws = ['--json', '--table', tableName];
    const commands = [
      ['templates', 'put', 'welcome', '--subject', 'Hi'],
      ['templates', 'list'],
      ['templates', 'show', 'welcome'],
      ['templates', 'render', 'welcome', '--data-file', 'data.json'],
      ['templates', 'archive', 'welcome'],
    ];
    for (const args of commands) {
      const result = await postdate([...aws, ...args]);
      expect({ args, code: result.code }).toEqual({ args, code: EXIT.usage });
      expect(JSON.parse(result.stdout)).toMatchObject({
        error: { type: 'urn:postdate:cli:usage', detail: expect.stringContaining('--tenant') },
      });
    }
    expect((await store.list('local', { limit: 100, after: null })).items).toEqual([]);

    await store.putVersion({
      tenant: 'acme',
      name: 'welcome',
      content: { subject: 'Hi', html: null, text: 'Hi' },
      description: null,
      now: new Date(),
    });
    const acme = await postdate([...aws, 'templates', 'list', '--tenant', 'acme']);
    expect(acme.code).toBe(EXIT.ok);
    expect(JSON.parse(acme.stdout)).toMatchObject({ items: [{ name: 'welcome' }] });
    // The local stack keeps its default tenant.
    await store.putVersion({
      tenant: 'local',
      name: 'local-only',
      content: { subject: 'Hi', html: null, text: 'Hi' },
      description: null,
      now: new Date(),
    });
    const local = await postdate(['--local', ...aws, 'templates', 'list']);
    expect(local.code).toBe(EXIT.ok);
    expect(JSON.parse(local.stdout)).toMatchObject({ items: [{ name: 'local-only' }] });
  }, 120_000);

  it('a file that cannot be read is bad usage naming its flag and path (exit 2), never an unexpected error', async () => {
    // A team's weekly script runs `templates put` from its checkout: a moved file is its mistake
    // to fix, said as such (decision 0251).
    const { tableName } = await freshTable('cli-templates-files');
    const dir = mkdtempSync(join(tmpdir(), 'postdate-templates-'));
    const missing = join(dir, 'order.html');
    const runs = [
      { args: ['put', 'order', '--subject', 'Order', '--html-file', missing], flag: '--html-file' },
      { args: ['put', 'order', '--subject', 'Order', '--text-file', missing], flag: '--text-file' },
      { args: ['render', 'order', '--data-file', missing], flag: '--data-file' },
    ];
    for (const { args, flag } of runs) {
      const result = await postdate([
        '--json',
        '--table',
        tableName,
        'templates',
        ...args,
        '--tenant',
        'acme',
      ]);
      expect({ args, code: result.code }).toEqual({ args, code: EXIT.usage });
      const document = JSON.parse(result.stdout) as { error: { type: string; detail: string } };
      expect(document.error.type).toBe('urn:postdate:cli:usage');
      expect(document.error.detail).toBe(`${flag} ${missing} cannot be read: no such file`);
    }
    const notJson = join(dir, 'data.json');
    writeFileSync(notJson, '{order');
    const render = await postdate([
      '--json',
      '--table',
      tableName,
      'templates',
      'render',
      'order',
      '--data-file',
      notJson,
      '--tenant',
      'acme',
    ]);
    expect(render.code).toBe(EXIT.usage);
    expect(JSON.parse(render.stdout).error.detail).toBe(`--data-file ${notJson} is not a JSON file`);
  }, 120_000);

  it('`templates show --help` names the flag that picks a version (--version prints the CLI’s)', () => {
    const show = buildProgram()
      .commands.find((command) => command.name() === 'templates')
      ?.commands.find((command) => command.name() === 'show');
    expect(show?.description()).not.toMatch(/--version\b/);
    expect(show?.description()).toContain('--template-version N');
  });
});
