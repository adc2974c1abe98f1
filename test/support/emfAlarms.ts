/**
 * A CloudWatch alarm of the synthesized template, and its datapoints in the EMF documents a function
 * wrote: the metric's values under exactly the alarm's namespace and dimensions, as CloudWatch would
 * aggregate them for it (an EMF document whose dimension set differs feeds another metric).
 */

/** One EMF document, as a function writes it to its log. */
export interface EmfDocument extends Record<string, unknown> {
  readonly _aws: {
    readonly CloudWatchMetrics: readonly {
      readonly Namespace: string;
      readonly Dimensions: readonly (readonly string[])[];
      readonly Metrics: readonly { readonly Name: string }[];
    }[];
  };
}

export interface AlarmOf {
  /** The alarm's logical id in the template. */
  readonly id: string;
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly statistic: string;
  readonly threshold: number;
  readonly comparison: string;
  readonly treatMissingData: string;
}

/** An `AWS::CloudWatch::Alarm` resource's properties, read as {@link AlarmOf}. */
export function alarmOf(id: string, properties: Record<string, unknown>): AlarmOf {
  return {
    id,
    namespace: properties.Namespace as string,
    metricName: properties.MetricName as string,
    dimensions: Object.fromEntries(
      (properties.Dimensions as { Name: string; Value: string }[]).map(({ Name, Value }) => [Name, Value]),
    ),
    statistic: properties.Statistic as string,
    threshold: properties.Threshold as number,
    comparison: properties.ComparisonOperator as string,
    treatMissingData: properties.TreatMissingData as string,
  };
}

/** The alarm's datapoints in the documents: its metric under exactly its namespace and dimensions. */
export function datapoints(
  alarm: Pick<AlarmOf, 'namespace' | 'metricName' | 'dimensions'>,
  documents: readonly EmfDocument[],
): number[] {
  const wanted = Object.keys(alarm.dimensions).sort().join(',');
  return documents.flatMap((document) =>
    document._aws.CloudWatchMetrics.filter(
      (directive) =>
        directive.Namespace === alarm.namespace &&
        directive.Metrics.some((metric) => metric.Name === alarm.metricName) &&
        directive.Dimensions.some(
          (set) =>
            [...set].sort().join(',') === wanted &&
            set.every((name) => String(document[name]) === alarm.dimensions[name]),
        ),
    ).flatMap(() => {
      const value = document[alarm.metricName];
      return (Array.isArray(value) ? value : [value]).map(Number);
    }),
  );
}
