import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type LocalPart, listenAs } from '../localEnv.js';
import type { ReceivedMail, ReceivedMailSummary, SmtpSink } from './smtpSink.js';

export interface MailViewer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * A small web page over the SMTP sink:
 * - `GET /` lists received mail, newest first (refreshes itself every 5 s);
 * - `GET /messages/{id}` shows one message's raw source, `GET /messages/{id}.eml` downloads it;
 * - `GET /api/messages` is the same list as JSON (for tests and the chaos checker),
 *   `GET /api/messages/{id}` one message with its `raw` source, `DELETE /api/messages` empties the sink.
 */
export async function startMailViewer(options: {
  port: number;
  host?: string;
  sink: SmtpSink;
  /** The part whose variable a taken port's PortInUseError names; unset (the backup relay's), the listen's own error is kept. */
  part?: LocalPart;
}): Promise<MailViewer> {
  const host = options.host ?? '127.0.0.1';
  const { sink } = options;
  const server = createServer((request, response) => {
    try {
      send(response, route(sink, request));
    } catch {
      send(response, text(500, 'mail viewer error'));
    }
  });
  const port = await listenAs(options.part, server, options.port, host);
  return {
    url: `http://${host}:${port}/`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Reply {
  readonly status: number;
  readonly contentType?: string;
  readonly body?: string | Buffer;
}

const json = (status: number, body: unknown): Reply => ({
  status,
  contentType: 'application/json',
  body: JSON.stringify(body),
});
const text = (status: number, body: string): Reply => ({
  status,
  contentType: 'text/plain; charset=utf-8',
  body,
});
const html = (body: string): Reply => ({ status: 200, contentType: 'text/html; charset=utf-8', body });

function route(sink: SmtpSink, request: IncomingMessage): Reply {
  const path = new URL(request.url ?? '/', 'http://viewer').pathname;
  const method = request.method ?? 'GET';
  if (method === 'GET' && path === '/api/messages') {
    return json(200, { items: sink.messages().map(summary).reverse() });
  }
  if (method === 'DELETE' && path === '/api/messages') {
    sink.clear();
    return { status: 204 };
  }
  const apiMatch = /^\/api\/messages\/([0-9A-Z]+)$/.exec(path);
  if (method === 'GET' && apiMatch?.[1]) {
    const mail = sink.message(apiMatch[1]);
    if (!mail) return json(404, { message: 'no such message' });
    return json(200, { ...summary(mail), raw: mail.raw.toString('utf8') });
  }
  const pageMatch = /^\/messages\/([0-9A-Z]+)(\.eml)?$/.exec(path);
  if (method === 'GET' && pageMatch?.[1]) {
    const mail = sink.message(pageMatch[1]);
    if (!mail) return text(404, 'no such message');
    if (pageMatch[2]) return { status: 200, contentType: 'message/rfc822', body: mail.raw };
    return html(messagePage(mail));
  }
  if (method === 'GET' && path === '/') return html(listPage(sink.messages()));
  return text(404, 'not found');
}

function send(response: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (reply.contentType) headers['content-type'] = reply.contentType;
  response.writeHead(reply.status, headers);
  response.end(reply.body);
}

function summary(mail: ReceivedMail): ReceivedMailSummary {
  const { raw: _raw, ...rest } = mail;
  return rest;
}

function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = `body{font:14px system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .6rem;border-bottom:1px solid #ddd;vertical-align:top}
th{background:#f4f4f4}td.mono,pre{font-family:ui-monospace,monospace;font-size:12px}pre{white-space:pre-wrap;word-break:break-all;background:#f8f8f8;padding:1rem}`;

function page(title: string, body: string, refresh = false): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>${
    refresh ? '<meta http-equiv="refresh" content="5">' : ''
  }<style>${STYLE}</style></head><body>${body}</body></html>`;
}

function listPage(mails: readonly ReceivedMail[]): string {
  const rows = [...mails]
    .reverse()
    .map(
      (mail) => `<tr><td class="mono">${escapeHtml(mail.receivedAt)}</td>
<td>${escapeHtml(mail.envelope.from ?? '<>')}</td><td>${escapeHtml(mail.envelope.to.join(', '))}</td>
<td><a href="/messages/${mail.id}">${escapeHtml(mail.subject ?? '(no subject)')}</a></td>
<td class="mono">${escapeHtml(mail.messageId ?? '')}</td><td class="mono">${escapeHtml(mail.postdateId ?? '')}</td>
<td>${mail.size}</td></tr>`,
    )
    .join('\n');
  return page(
    `Postdate mail (${mails.length})`,
    `<h1>Postdate local mail sink</h1><p>${mails.length} message(s) received. Nothing here was relayed anywhere.
JSON: <a href="/api/messages">/api/messages</a></p>
<table><thead><tr><th>received</th><th>envelope from</th><th>envelope to</th><th>subject</th><th>Message-ID</th><th>X-Postdate-Id</th><th>bytes</th></tr></thead>
<tbody>${rows || '<tr><td colspan="7">No mail yet.</td></tr>'}</tbody></table>`,
    true,
  );
}

function messagePage(mail: ReceivedMail): string {
  return page(
    mail.subject ?? '(no subject)',
    `<p><a href="/">&larr; all mail</a> · <a href="/messages/${mail.id}.eml">download .eml</a></p>
<h1>${escapeHtml(mail.subject ?? '(no subject)')}</h1>
<table><tbody>
<tr><th>received</th><td class="mono">${escapeHtml(mail.receivedAt)}</td></tr>
<tr><th>envelope from</th><td>${escapeHtml(mail.envelope.from ?? '<>')}</td></tr>
<tr><th>envelope to</th><td>${escapeHtml(mail.envelope.to.join(', '))}</td></tr>
<tr><th>Message-ID</th><td class="mono">${escapeHtml(mail.messageId ?? '')}</td></tr>
<tr><th>X-Postdate-Id</th><td class="mono">${escapeHtml(mail.postdateId ?? '')}</td></tr>
<tr><th>size</th><td>${mail.size} bytes</td></tr></tbody></table>
<h2>Raw source</h2><pre>${escapeHtml(mail.raw.toString('utf8'))}</pre>`,
  );
}
