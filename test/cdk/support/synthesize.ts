import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { PostdateStack, type PostdateStackProps } from '../../../lib/PostdateStack.js';

/** Props of the stack under test: deliberately not the defaults, so each value can be traced. */
export const TEST_PROPS: PostdateStackProps = {
  postdate: {
    defaultFrom: 'Ops <ops@example.com>',
    allowedFrom: ['ops@example.com', '*@mail.example.com'],
    smtpHost: 'smtp.example.net',
    maxAttempts: 5,
    senderMaxConcurrency: 7,
    maxSendRate: 12,
    apiThrottle: { rateLimit: 321, burstLimit: 654 },
  },
};

export interface Synthesized {
  readonly app: App;
  readonly stack: PostdateStack;
  readonly template: Template;
}

/**
 * An app for the assertion tests: no bundling (the context key makes NodejsFunction stage a
 * placeholder instead of running esbuild) and no built-in CloudFormation schema validation (about
 * ten seconds of WebAssembly per synth). test/cdk/synth.test.ts runs the real app with both.
 */
export function testApp(): App {
  return new App({ context: { 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
}

/** One Postdate stack, synthesized once per test file. */
export function synthesizePostdate(props: PostdateStackProps = TEST_PROPS): Synthesized {
  const app = testApp();
  const stack = new PostdateStack(app, 'PostdateUnderTest', props);
  return { app, stack, template: Template.fromStack(stack) };
}

/** The logical id CloudFormation gives a construct's resource, read from the construct (never typed in). */
export function logicalIdOf(construct: IConstruct): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(construct).resolve(element.logicalId) as string;
}

/** A template resource as the tests read it (every Postdate resource has Properties). */
export type Resource = { Type: string; Properties: Record<string, unknown> } & Record<string, unknown>;

/** The one resource of a type that matches, or a failed expectation naming how many matched. */
export function only(resources: Record<string, object>): [string, Resource] {
  const entries = Object.entries(resources);
  if (entries.length !== 1)
    throw new Error(`expected exactly one matching resource, found ${entries.length}`);
  return entries[0] as [string, Resource];
}

/** Every IAM statement attached to a role (its inline policies), with actions and resources as arrays. */
export function statementsOfRole(template: Template, roleLogicalId: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: [{ Ref: roleLogicalId }] },
  });
  return Object.values(policies).flatMap((policy) => {
    const document = (policy.Properties as { PolicyDocument: { Statement: RawStatement[] } }).PolicyDocument;
    return document.Statement.map((statement) => ({
      ...statement,
      Action: toArray(statement.Action),
      Resource: toArray(statement.Resource),
    }));
  });
}

interface RawStatement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
  Sid?: string;
}

export interface Statement {
  Effect: string;
  Action: string[];
  Resource: unknown[];
  Condition?: unknown;
  Sid?: string;
}

function toArray<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
}
