import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges one cdk-nag finding on one construct (cdk-nag 3 uses CDK's native
 * `Validations.of(…).acknowledge`; `NagSuppressions` no longer exists). The finding id is exact —
 * `Rule[Finding]` for rules that report several findings — so nothing else is silenced.
 */
export function acknowledge(construct: IConstruct, id: string, reason: string): void {
  Validations.of(construct).acknowledge({ id, reason });
}
