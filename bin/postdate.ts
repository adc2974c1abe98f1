#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { settingsFromContext } from '../lib/contextProps.js';
import { PostdateStack } from '../lib/PostdateStack.js';

// The app only: settings come from context (`cdk deploy -c key=value`, docs/deploy.md).
const app = new App();
const settings = settingsFromContext(
  (key) => app.node.tryGetContext(key),
  Object.keys(app.node.getAllContext()),
);
new PostdateStack(app, settings.stackName, {
  ...settings.stackProps,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
