import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PostdateStack } from '../../lib/PostdateStack.js';
import {
  logicalIdOf,
  only,
  type Resource,
  type Statement,
  statementsOfRole,
  synthesizePostdate,
} from './support/synthesize.js';

let template: Template;
let stack: PostdateStack;

beforeAll(() => {
  ({ template, stack } = synthesizePostdate());
});

const statementsOf = (name: keyof PostdateStack['postdate']['functions']): Statement[] => {
  const fn = template.toJSON().Resources[logicalIdOf(stack.postdate.functions[name])] as Resource;
  const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return statementsOfRole(template, role);
};
const s3Statements = (name: keyof PostdateStack['postdate']['functions']) =>
  statementsOf(name).filter((s) => s.Action.some((a) => a.startsWith('s3:')));
/**
 * Listing the bucket, which S3 asks of a caller before it answers a missing key 404 rather than 403
 * (decision 0174): the same statement for each function that may meet one.
 */
const listing = () =>
  expect.objectContaining({
    Effect: 'Allow',
    Action: ['s3:ListBucket'],
    Resource: [{ 'Fn::GetAtt': [logicalIdOf(stack.postdate.attachmentBucket), 'Arn'] }],
  });
const objectsIn = (area: string) => ({
  'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalIdOf(stack.postdate.attachmentBucket), 'Arn'] }, `/${area}*`]],
});

describe("the attachments' bucket (DESIGN §13)", () => {
  it('is encrypted, private, owner-enforced and refuses plain HTTP', () => {
    const [, bucket] = only(template.findResources('AWS::S3::Bucket'));
    expect(bucket.Properties).toMatchObject({
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('deletes unreferenced uploads, and what an enqueue stored that no message took (pending), after a day; ended messages’ attachments after the retention; nothing else', () => {
    const [, bucket] = only(template.findResources('AWS::S3::Bucket'));
    const rules = (bucket.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules).toEqual([
      expect.objectContaining({
        Id: 'UnreferencedUploads',
        Prefix: 'uploads/',
        ExpirationInDays: 1,
        Status: 'Enabled',
      }),
      expect.objectContaining({
        Id: 'UnacceptedAttachments',
        Prefix: 'messages/',
        TagFilters: [{ Key: 'postdate-lifetime', Value: 'pending' }],
        ExpirationInDays: 1,
        Status: 'Enabled',
      }),
      expect.objectContaining({
        Id: 'EndedMessages',
        Prefix: 'messages/',
        TagFilters: [{ Key: 'postdate-lifetime', Value: 'ended' }],
        ExpirationInDays: 30,
        Status: 'Enabled',
      }),
    ]);
  });

  it('lets only the api write, pre-sign and read uploads (and look for a message’s attachments before a retry), only the sender and the api read a message’s attachments, only the api (as it writes them) and the event producer tag them (and rewrite an ended one in place)', () => {
    expect(s3Statements('api')).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:PutObject'],
        Resource: [objectsIn('messages/'), objectsIn('uploads/')],
      }),
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:PutObjectTagging'],
        Resource: [objectsIn('messages/')],
      }),
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:GetObject'],
        Resource: [objectsIn('uploads/'), objectsIn('messages/')],
      }),
      listing(),
    ]);
    expect(s3Statements('sender')).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:GetObject'],
        Resource: [objectsIn('messages/')],
      }),
      listing(),
    ]);
    expect(s3Statements('events')).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:PutObjectTagging'],
        Resource: [objectsIn('messages/')],
      }),
      // An ended message's object written on an earlier day is copied onto itself (decision 0191).
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['s3:GetObject', 's3:PutObject'],
        Resource: [objectsIn('messages/')],
      }),
      listing(),
    ]);
    for (const name of ['authorizer', 'relay', 'sweeper', 'webhooks'] as const)
      expect(s3Statements(name), name).toEqual([]);
  });

  it("lets the event producer read a message's state record, from which it decides the tags (decision 0144)", () => {
    expect(statementsOf('events')).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['dynamodb:GetItem'],
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['MSG#*'] } },
      }),
    );
  });

  it('tells the api, the sender and the event producer the bucket, and no other function', () => {
    const variables = (name: keyof PostdateStack['postdate']['functions']) => {
      const fn = template.toJSON().Resources[logicalIdOf(stack.postdate.functions[name])] as Resource;
      return (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    };
    const bucketRef = { Ref: logicalIdOf(stack.postdate.attachmentBucket) };
    expect(variables('api').POSTDATE_ATTACHMENT_BUCKET).toEqual(bucketRef);
    expect(variables('sender').POSTDATE_ATTACHMENT_BUCKET).toEqual(bucketRef);
    expect(variables('events').POSTDATE_ATTACHMENT_BUCKET).toEqual(bucketRef);
    for (const name of ['relay', 'sweeper', 'webhooks'] as const)
      expect(variables(name).POSTDATE_ATTACHMENT_BUCKET, name).toBeUndefined();
  });
});
