import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import {
  ATTACHMENT_AREAS,
  ATTACHMENT_LIFETIME_TAG,
  ATTACHMENT_LIMITS,
} from '../../lambdas/core/attachments.js';
import { RESOURCE_SETTINGS } from '../../lambdas/core/configSpec.js';
import { acknowledge } from './acknowledge.js';
import type { PostdateFunction } from './postdateFunction.js';

export interface AttachmentsProps {
  /** `RETAIN` keeps the bucket (and its objects) when the stack goes; `DESTROY` empties and deletes it. */
  readonly removalPolicy: RemovalPolicy;
  /** `POSTDATE_RETENTION_DAYS`: how long an ended message's attachments are kept. */
  readonly retentionDays: number;
}

/**
 * The attachments' bucket (DESIGN §13): S3-managed encryption, TLS only, no public access, bucket
 * owner owns every object. Its lifecycle follows the messages' (DESIGN §2, core/messageLifetime.ts):
 * - `uploads/`: a reserved upload is deleted a day after it was made, referenced or not (an
 *   enqueue copies what it references into `messages/`);
 * - `messages/`: an enqueue writes its objects tagged `postdate-lifetime=pending`, which expire a
 *   day later: those of an enqueue that never became a message (docs/decisions/0144). The message's
 *   record has them tagged `live` (no expiry while the message lives), then `ended` when it ends,
 *   which expire a retention after the end: the rule counts from the write, so an object written on
 *   an earlier day is copied onto itself then (docs/decisions/0083, 0191).
 * Grants: only the api writes and pre-signs, only the sender reads a message's attachments, only
 * the api (at the write) and the event producer tag them; all by area, each key under its tenant.
 */
export class Attachments extends Construct {
  readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: AttachmentsProps) {
    super(scope, id);
    const destroy = props.removalPolicy === RemovalPolicy.DESTROY;
    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
      autoDeleteObjects: destroy,
      lifecycleRules: [
        {
          id: 'UnreferencedUploads',
          prefix: ATTACHMENT_AREAS.uploads,
          expiration: Duration.days(ATTACHMENT_LIMITS.unreferencedUploadDays),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        {
          id: 'UnacceptedAttachments',
          prefix: ATTACHMENT_AREAS.messages,
          tagFilters: { [ATTACHMENT_LIFETIME_TAG.key]: ATTACHMENT_LIFETIME_TAG.pending },
          expiration: Duration.days(ATTACHMENT_LIMITS.unreferencedUploadDays),
        },
        {
          id: 'EndedMessages',
          prefix: ATTACHMENT_AREAS.messages,
          tagFilters: { [ATTACHMENT_LIFETIME_TAG.key]: ATTACHMENT_LIFETIME_TAG.ended },
          expiration: Duration.days(props.retentionDays),
        },
      ],
    });
    acknowledge(
      this.bucket,
      'AwsSolutions-S1',
      'Attachments are read only by the sender and written only by the api (copied onto themselves by the event producer at the end), each call in CloudTrail when data events are on; a server-access-log bucket would itself need one.',
    );
  }

  /** The objects of one area, as an IAM resource: every tenant's keys under it. */
  private areaArn(area: keyof typeof ATTACHMENT_AREAS): string {
    return this.bucket.arnForObjects(`${ATTACHMENT_AREAS[area]}*`);
  }

  /**
   * The api: stores inline attachments under `messages/`; reserves uploads under `uploads/` (the
   * declaration it puts, and the pre-signed PUT, which S3 authorizes as this role's `s3:PutObject`);
   * reads an upload to check it and copy it into `messages/` (CopyObject: GetObject on the source,
   * PutObject on the copy); tags what it writes into `messages/` `pending` in the same request (S3
   * authorizes the tags of a PUT or a copy as `s3:PutObjectTagging`); looks whether a message's attachments are still there before a manual
   * retry (HeadObject, which IAM authorizes as GetObject; decision 0130).
   */
  grantApi(api: PostdateFunction): void {
    api.function.addEnvironment(RESOURCE_SETTINGS.attachmentBucket.variable, this.bucket.bucketName);
    api.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'WriteAttachments',
        actions: ['s3:PutObject'],
        resources: [this.areaArn('messages'), this.areaArn('uploads')],
      }),
    );
    api.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TagWrittenAttachments',
        actions: ['s3:PutObjectTagging'],
        resources: [this.areaArn('messages')],
      }),
    );
    api.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadAttachments',
        actions: ['s3:GetObject'],
        resources: [this.areaArn('uploads'), this.areaArn('messages')],
      }),
    );
    this.grantMissingKeysTold(api);
    const why = 'the api serves every tenant; the key after the area is the tenant';
    this.acknowledgeArea(api, 'messages', why);
    this.acknowledgeArea(api, 'uploads', why);
  }

  /**
   * The event producer: tags a message's attachments `live` once its record is written, `ended` for
   * the bucket's expiry when it ends (and `live` again when taken back), nothing else
   * (docs/decisions/0090-attachment-end-tagging.md, 0144). The tag is read off the message's record
   * (its `dynamodb:GetItem` is granted beside this, by the stack). At the end it reads an object's
   * written time (HeadObject: GetObject) and copies an older one onto itself, tagged in the same
   * request (CopyObject: GetObject on the source, PutObject and PutObjectTagging on the copy;
   * decision 0191).
   */
  grantLifetimeTagging(producer: PostdateFunction): void {
    producer.function.addEnvironment(RESOURCE_SETTINGS.attachmentBucket.variable, this.bucket.bucketName);
    producer.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TagMessageAttachments',
        actions: ['s3:PutObjectTagging'],
        resources: [this.areaArn('messages')],
      }),
    );
    producer.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'RewriteEndedAttachments',
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [this.areaArn('messages')],
      }),
    );
    this.grantMissingKeysTold(producer);
    this.acknowledgeArea(
      producer,
      'messages',
      "the event producer reads every tenant's stream records; the key after the area is the tenant",
    );
  }

  /** The sender: reads the attachments of the messages it sends, and may learn that one is gone. */
  grantSender(sender: PostdateFunction): void {
    sender.function.addEnvironment(RESOURCE_SETTINGS.attachmentBucket.variable, this.bucket.bucketName);
    sender.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadMessageAttachments',
        actions: ['s3:GetObject'],
        resources: [this.areaArn('messages')],
      }),
    );
    this.grantMissingKeysTold(sender);
    this.acknowledgeArea(
      sender,
      'messages',
      'the sender serves every tenant; the key after the area is the tenant',
    );
  }

  /**
   * S3 answers a missing key 404 only to a caller that may also list the bucket; to any other it
   * answers 403 AccessDenied (the GetObject and HeadObject references), which the adapter cannot tell
   * from a real refusal (adapters/S3AttachmentStore.ts, decision 0174). Every function that reads,
   * checks or tags an object that may be gone needs it. Not narrowed by `s3:prefix`: S3 documents no
   * prefix for the check it makes on a missing key, and the keys hold only tenants and ids.
   */
  private grantMissingKeysTold(grantee: PostdateFunction): void {
    grantee.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TellMissingAttachments',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
      }),
    );
  }

  private acknowledgeArea(grantee: PostdateFunction, area: keyof typeof ATTACHMENT_AREAS, why: string): void {
    const stack = Stack.of(this);
    const cfnBucket = this.bucket.node.defaultChild as s3.CfnBucket;
    const logicalId = stack.resolve(stack.getLogicalId(cfnBucket)) as string;
    acknowledge(
      grantee.role,
      `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/${ATTACHMENT_AREAS[area]}*]`,
      `Objects of the attachments' ${ATTACHMENT_AREAS[area]} area only: ${why}.`,
    );
  }
}
