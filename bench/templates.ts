/**
 * Templates (DESIGN §10, issue 18), measured side by side in one run:
 *
 * 1. cost per million of a template message (about 20 KB of rendered html from about 1 KB of data)
 *    beside the same message sent inline (the 20 KB html in the request), through the real handlers
 *    on the local stack with every AWS request counted and priced as bench/cost.ts does;
 * 2. the sender's time per message for its body step (bench: sendableBody, the one place the
 *    sender reads and renders the body) with and without rendering, compiled-template cache warm.
 */
import { createTemplateRenderer } from '../lambdas/core/templateRenderer.js';
import { sendableBody } from '../lambdas/sender/sendClaimed.js';
import type { MessageBodyRecord } from '../lambdas/store/messageRecord.js';
import { installAwsRequestCounter } from './awsRequestCounter.js';
import type { BenchOptions, BenchResult, BenchRow } from './benchResult.js';
import { ratioRow } from './benchResult.js';
import { startBenchStack, waitForDelivery } from './benchStack.js';
import { billOf, captureLogBytes } from './cost.js';
import { round, sleep } from './stats.js';

/** 40 rows of about 500 bytes of html each: ≈ 20 KB rendered from ≈ 1 KB of data. */
const ROWS = 40;
const TEMPLATE = {
  subject: 'Your order {{order.id}} has shipped',
  text: 'Hi {{customer.name}}, order {{order.id}} is on its way.',
  html: '<html><body><h1>Hi {{customer.name}}</h1>{{#each rows}}<table class="row" style="width:100%;border:0;padding:8px;font-family:Helvetica,Arial,sans-serif;font-size:14px;color:#333333;background:#fafafa"><tr><td style="padding:4px 8px">{{../order.id}}</td><td style="padding:4px 8px">{{this.item}}</td><td style="padding:4px 8px;text-align:right">{{this.price}}</td></tr><tr><td colspan="3" style="padding:4px 8px;color:#777777;font-size:12px">Thank you for shopping with {{../shop}}. Questions? Reply to this email.</td></tr></table>{{/each}}</body></html>',
};

function templateData(i: number) {
  return {
    customer: { name: `Customer ${i}` },
    order: { id: `A-${1000 + i}` },
    shop: 'Example Shop',
    rows: Array.from({ length: ROWS }, (_, row) => ({ item: `item ${row}`, price: `${row}.00` })),
  };
}

export async function templates(options: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const perScenario = options.quick ? 3 : 10;
  const rows: BenchRow[] = [];
  const details: Record<string, unknown> = { messagesPerScenario: perScenario };

  // The rendered html of the template, to send the same bytes inline.
  const renderer = createTemplateRenderer(async () => TEMPLATE);
  const sample = await renderer.render({ tenant: 'bench', name: 'x', version: 1 }, templateData(0));
  if (sample.kind !== 'rendered') throw new Error('the bench template does not render');
  details.renderedHtmlBytes = Buffer.byteLength(sample.content.html ?? '');
  details.dataBytes = Buffer.byteLength(JSON.stringify(templateData(0)));

  const counter = installAwsRequestCounter();
  const logBytes = captureLogBytes();
  const previousMetrics = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const stack = await startBenchStack({}, { quiet: false, countSandboxRequests: true });
  const call = (method: string, path: string, body: unknown, key?: string) =>
    fetch(`${stack.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify(body),
    });
  const perMillion: Record<string, number> = {};
  try {
    const stored = await call('PUT', '/v1/templates/bench-shipped', TEMPLATE);
    if (stored.status !== 201) throw new Error(`PUT template answered ${stored.status}`);
    const scenarios = [
      {
        name: 'inline 20 KB html',
        body: (i: number) => {
          const rendered = sample.content;
          return {
            to: ['bench@example.com'],
            subject: `${rendered.subject} ${i}`,
            text: rendered.text,
            html: rendered.html,
          };
        },
      },
      {
        name: 'template (20 KB html from 1 KB data)',
        body: (i: number) => ({
          to: ['bench@example.com'],
          template: { name: 'bench-shipped' },
          data: templateData(i),
        }),
      },
    ];
    // Warm every function (and the api's and the sender's template caches) first.
    const warm: string[] = [];
    for (const scenario of scenarios) {
      const response = await call(
        'POST',
        '/v1/messages',
        scenario.body(0),
        `tpl-warm-${scenario.name}-${Date.now()}`,
      );
      warm.push(((await response.json()) as { id: string }).id);
    }
    await waitForDelivery(stack, warm, 30_000);
    await settle(stack);
    counter.take();
    logBytes.take();

    for (const scenario of scenarios) {
      const ids: string[] = [];
      for (let i = 0; i < perScenario; i++) {
        const response = await call(
          'POST',
          '/v1/messages',
          scenario.body(i),
          `tpl-${scenario.name}-${i}-${Date.now()}`,
        );
        if (response.status !== 202) throw new Error(`${scenario.name}: enqueue answered ${response.status}`);
        ids.push(((await response.json()) as { id: string }).id);
      }
      await waitForDelivery(stack, ids, 60_000);
      await settle(stack);
      const bill = billOf(counter.take(), logBytes.take(), perScenario);
      perMillion[scenario.name] = bill.reduce((sum, line) => sum + line.usdPerMillion, 0);
      options.log(`  ${scenario.name}: $${round(perMillion[scenario.name] ?? 0, 3)} per million`);
      for (const line of bill) {
        options.log(
          `    ${line.item.padEnd(58)} ${String(round(line.quantity, 3)).padStart(8)} ${line.unit.padEnd(10)} $${round(line.usdPerMillion, 3)}/M  (${line.how})`,
        );
      }
      (details as Record<string, unknown>)[scenario.name] = {
        usdPerMillion: round(perMillion[scenario.name] ?? 0, 4),
        bill,
      };
    }
  } finally {
    await stack.stop();
    counter.uninstall();
    logBytes.restore();
    if (previousMetrics === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = previousMetrics;
  }
  const inline = perMillion['inline 20 KB html'] ?? 0;
  const template = perMillion['template (20 KB html from 1 KB data)'] ?? 0;
  rows.push(
    ratioRow({
      metric: 'template message (20 KB html from 1 KB data): $ per million',
      value: round(template, 3),
      unit: '$/M',
      baselineLabel: 'the same message inline, $/M',
      baseline: round(inline, 3),
    }),
  );

  // The sender's body step per message, cache warm: an inline body vs a template body.
  const iterations = options.quick ? 200 : 2000;
  const warmRenderer = createTemplateRenderer(async () => TEMPLATE);
  const envelope = {
    pk: 'MSG#bench',
    sk: 'BODY' as const,
    fingerprint: 'bench',
    created_at: new Date().toISOString(),
    from: 'ops@example.com',
    to: ['bench@example.com'],
    cc: [],
    bcc: [],
    reply_to: null,
    headers: {},
  };
  const inlineBody: MessageBodyRecord = { ...envelope, ...sample.content };
  const templateBody: MessageBodyRecord = {
    ...envelope,
    subject: '',
    text: null,
    html: null,
    template: { name: 'bench-shipped', version: 1 },
    data_json: JSON.stringify(templateData(1)),
  };
  const time = async (body: MessageBodyRecord) => {
    await sendableBody(warmRenderer, 'bench', body);
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await sendableBody(warmRenderer, 'bench', body);
    return Number(process.hrtime.bigint() - start) / 1e6 / iterations;
  };
  const inlineMs = await time(inlineBody);
  const renderMs = await time(templateBody);
  const coldStart = process.hrtime.bigint();
  await createTemplateRenderer(async () => TEMPLATE).render(
    { tenant: 'b', name: 'x', version: 1 },
    templateData(1),
  );
  const compileMs = Number(process.hrtime.bigint() - coldStart) / 1e6;
  rows.push({
    metric: 'sender body step per message, template rendered (cache warm)',
    value: round(renderMs, 4),
    unit: 'ms',
    baseline: { label: 'inline body, ms', value: round(inlineMs, 4) },
    comparison: { kind: 'difference', value: round(renderMs - inlineMs, 4) },
    note: `first render of a version (read + compile) ${round(compileMs, 2)} ms, once per warm function`,
  });
  options.log(
    `  sender body step: inline ${round(inlineMs, 4)} ms, template ${round(renderMs, 4)} ms per message (warm); first compile ${round(compileMs, 2)} ms`,
  );
  details.senderBodyStep = { iterations, inlineMs, renderMs, compileMs };
  return {
    name: 'templates',
    title: 'Templates: cost per million beside the same message inline, and the sender time of rendering',
    rows,
    details,
    seconds: (Date.now() - started) / 1000,
  };
}

async function settle(stack: { idle(): Promise<void> }): Promise<void> {
  await stack.idle();
  await sleep(1500);
  await stack.idle();
}
