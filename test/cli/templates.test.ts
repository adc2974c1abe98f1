/**
 * `postdate templates put|list|show|render` against DynamoDB Local: the commands the CLI wires, with
 * files read as the CLI reads them and output captured as a person (or `--json`) would see it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../cli/cliErrors.js';
import type { Output } from '../../cli/output.js';
import {
  type TemplatesDeps,
  templatesList,
  templatesPut,
  templatesRender,
  templatesShow,
} from '../../cli/templatesCommands.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { documentClient, freshTable } from '../support/awsLocal.js';

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
  const files: Record<string, string> = {
    'welcome.html': '<p>Hi {{name}}</p>',
    'welcome.txt': 'Hi {{name}}',
    'bad.html': '{{> footer}}',
    'data.json': '{"name": "<Ada>"}',
    'empty.json': '{}',
  };
  beforeAll(async () => {
    const { tableName } = await freshTable('cli-templates');
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
    expect(list.lines).toEqual(['welcome\tv2\tactive\tv2']);

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

  it('refuses what the API refuses, with its reasons, and names a missing variable', async () => {
    const bad = capture();
    expect(
      await templatesPut(deps, { name: 'bad', tenant: 'local', subject: 'x', htmlFile: 'bad.html' }, bad.out),
    ).toBe(EXIT.failed);
    expect(bad.warnings.join('\n')).toContain('/html uses a partial');
    const missing = capture();
    expect(
      await templatesRender(deps, { name: 'welcome', tenant: 'local', dataFile: 'empty.json' }, missing.out),
    ).toBe(EXIT.failed);
    expect(missing.warnings.join('\n')).toContain('lacks `name`');
    const none = capture();
    expect(await templatesShow(deps, { name: 'nope', tenant: 'local' }, none.out)).toBe(EXIT.failed);
  });
});
