import type { SNSEvent } from 'aws-lambda';

/**
 * Amazon SES notifications in the shape SES publishes them to SNS (the SES Developer Guide,
 * "Amazon SNS notification contents" and "notification examples"): identity notifications with
 * `notificationType` and the original headers included, and configuration-set event publishing with
 * `eventType`. Only the ids and addresses are ours.
 */

const SES_MESSAGE_ID = '0100018c2f6b8a1e-5b7c9d1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e-000000';

/** The `mail` object of a message Postdate sent, with its headers as SES copies them. */
export function mailObject(postdateId: string, destination: readonly string[], domain = 'mail.test') {
  return {
    timestamp: '2026-12-01T09:00:00.000Z',
    source: 'ops@example.com',
    sourceArn: 'arn:aws:ses:us-east-1:123456789012:identity/example.com',
    sourceIp: '203.0.113.10',
    callerIdentity: 'postdate-smtp-user',
    sendingAccountId: '123456789012',
    messageId: SES_MESSAGE_ID,
    destination: [...destination],
    headersTruncated: false,
    headers: [
      { name: 'Received', value: 'from sender.example.com by email-smtp.amazonaws.com with SMTP' },
      { name: 'From', value: 'Ops <ops@example.com>' },
      { name: 'To', value: destination.join(', ') },
      { name: 'Subject', value: 'Campaign approved' },
      { name: 'Message-ID', value: `<${postdateId}@${domain}>` },
      { name: 'X-Postdate-Id', value: postdateId },
      { name: 'MIME-Version', value: '1.0' },
      { name: 'Content-Type', value: 'text/plain; charset=utf-8' },
    ],
    commonHeaders: {
      from: ['Ops <ops@example.com>'],
      to: [...destination],
      messageId: `<${postdateId}@${domain}>`,
      subject: 'Campaign approved',
    },
  };
}

export function permanentBounce(postdateId: string, addresses: readonly string[]) {
  return {
    notificationType: 'Bounce',
    bounce: {
      bounceType: 'Permanent',
      bounceSubType: 'General',
      bouncedRecipients: addresses.map((emailAddress) => ({
        emailAddress,
        action: 'failed',
        status: '5.1.1',
        diagnosticCode: `smtp; 550 5.1.1 <${emailAddress}>... User unknown`,
      })),
      timestamp: '2026-12-01T09:00:02.120Z',
      feedbackId: '0100018c2f6b9b2f-8a7b6c5d-4e3f-2a1b-0c9d-8e7f6a5b4c3d-000000',
      remoteMtaIp: '198.51.100.25',
      reportingMTA: 'dsn; a8-12.smtp-out.amazonses.com',
    },
    mail: mailObject(postdateId, addresses),
  };
}

export function transientBounce(postdateId: string, address: string) {
  return {
    notificationType: 'Bounce',
    bounce: {
      bounceType: 'Transient',
      bounceSubType: 'MailboxFull',
      bouncedRecipients: [{ emailAddress: address, action: 'failed', status: '4.2.2' }],
      timestamp: '2026-12-01T09:00:02.120Z',
      feedbackId: '0100018c2f6b9b2f-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d-000000',
    },
    mail: mailObject(postdateId, [address]),
  };
}

export function complaint(postdateId: string, address: string) {
  return {
    notificationType: 'Complaint',
    complaint: {
      userAgent: 'ExampleCorp Feedback Loop (V0.01)',
      complainedRecipients: [{ emailAddress: address }],
      complaintFeedbackType: 'abuse',
      arrivalDate: '2026-12-01T09:05:00.000Z',
      timestamp: '2026-12-01T09:05:01.000Z',
      feedbackId: '0100018c2f70f1ab-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-000000',
    },
    mail: mailObject(postdateId, [address]),
  };
}

export function delivery(postdateId: string, address: string) {
  return {
    notificationType: 'Delivery',
    delivery: {
      timestamp: '2026-12-01T09:00:01.500Z',
      processingTimeMillis: 546,
      recipients: [address],
      smtpResponse: '250 ok:  Message 111 accepted',
      reportingMTA: 'a8-70.smtp-out.amazonses.com',
      remoteMtaIp: '198.51.100.25',
    },
    mail: mailObject(postdateId, [address]),
  };
}

/** Configuration-set event publishing: `eventType` instead of `notificationType`. */
export function publishedBounceEvent(postdateId: string, address: string) {
  const { notificationType: _type, ...rest } = permanentBounce(postdateId, [address]);
  return { eventType: 'Bounce', ...rest };
}

/** The SNS event Lambda receives for one published notification. */
export function snsEvent(...messages: readonly (object | string)[]): SNSEvent {
  return {
    Records: messages.map((message, i) => ({
      EventSource: 'aws:sns',
      EventVersion: '1.0',
      EventSubscriptionArn:
        'arn:aws:sns:us-east-1:123456789012:ses-feedback:4f0c8a52-7d1e-4a3b-9c2d-1e0f9a8b7c6d',
      Sns: {
        Type: 'Notification',
        MessageId: `9b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d${String(i).padStart(2, '0')}`,
        TopicArn: 'arn:aws:sns:us-east-1:123456789012:ses-feedback',
        Subject: null as unknown as string,
        Message: typeof message === 'string' ? message : JSON.stringify(message),
        Timestamp: '2026-12-01T09:00:03.000Z',
        SignatureVersion: '1',
        Signature: 'EXAMPLE',
        SigningCertUrl:
          'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem',
        UnsubscribeUrl: 'https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe',
        MessageAttributes: {},
      },
    })),
  };
}
