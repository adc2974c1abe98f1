import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagePk } from '../../lambdas/store/messageRecord.js';
import { createSenderRig, type SenderRig, type SenderWorld, startSenderWorld } from './senderHarness.js';

/**
 * A body whose text and html are stored compressed (store/bodyContent.ts, issue 21) is sent exactly
 * as the same body stored plain, as items written before compression were: DynamoDB Local, the SQS
 * emulator and a real smtp-server, the two messages compared byte for byte at the server.
 */

/** Mail-like text and html, long enough that the writers compress them. */
const TEXT = Array.from(
  { length: 60 },
  (_, n) => `Line ${n}: your order ${1000 + n} has shipped — café, naïve, 日本語, “quotes”.`,
).join('\n');
const HTML = `<html><body><table>${Array.from(
  { length: 60 },
  (_, n) => `<tr><td class="item">Item ${n}</td><td class="price">€${n}.00</td></tr>`,
).join('')}</table><p>Thanks — the team</p></body></html>`;

let world: SenderWorld;
let rig: SenderRig;

beforeAll(async () => {
  world = await startSenderWorld();
  rig = await createSenderRig(world);
});
afterAll(async () => world?.close());

/** The raw message without what differs per message: its ids, its date and the MIME boundaries. */
function comparable(raw: string, id: string): string {
  const boundaries = [...raw.matchAll(/boundary="?([^";\r\n]+)"?/g)].map((match) => match[1] ?? '');
  let text = raw;
  for (const [n, boundary] of boundaries.entries()) text = text.replaceAll(boundary, `BOUNDARY-${n}`);
  return text
    .replaceAll(id, 'ID')
    .split('\r\n')
    .filter((line) => !/^(Message-ID|Date):/i.test(line))
    .join('\r\n');
}

async function sendOne(
  bodyForm: 'plain' | 'as-written',
): Promise<{ id: string; raw: string; item: unknown }> {
  const state = await rig.putMessage({ text: TEXT, html: HTML, bodyForm });
  const { Item } = await world.documents.send(
    new GetCommand({ TableName: world.tableName, Key: { pk: messagePk(state.id), sk: 'BODY' } }),
  );
  await rig.dispatch({ id: state.id, rev: state.rev });
  await rig.deliverNext();
  expect((await rig.state(state.id)).status).toBe('sent');
  const received = rig.received(state.id);
  expect(received).toHaveLength(1);
  return { id: state.id, raw: received[0]?.raw ?? '', item: Item };
}

describe('a body stored compressed', () => {
  it('is stored as brotli content with its marker, without the plain text and html', async () => {
    const { item } = await sendOne('as-written');
    expect(item).toMatchObject({ content_encoding: 'br', content: expect.any(Uint8Array) });
    for (const part of ['subject', 'text', 'html']) expect(item).not.toHaveProperty(part);
  });

  it('reaches the relay byte for byte as the same body stored plain (the older form, still read)', async () => {
    const plain = await sendOne('plain');
    expect(plain.item).toMatchObject({ text: TEXT, html: HTML });
    expect(plain.item).not.toHaveProperty('content_encoding');
    const compressed = await sendOne('as-written');
    expect(comparable(compressed.raw, compressed.id)).toBe(comparable(plain.raw, plain.id));
    // And the text itself went through (quoted-printable keeps the ASCII words readable).
    expect(plain.raw).toContain('has shipped');
    expect(plain.raw).toContain('class=3D"price"');
  });
});
