// A prom-client Histogram whose per-call observation is a bucket search and three additions.
// prom-client's own observe validates and hashes the label set on every call, even through a
// labelled child, which showed in the per-call profile (bench/README.md). Here each child keeps
// its counts in an array, and the exposition is built from them when the registry reads the
// metric, in the same values prom-client's Histogram produces (test/metrics/histogram.test.ts
// compares the two).
import { Histogram, type HistogramConfiguration, type MetricObjectWithValues, type MetricType, type MetricValueWithName } from 'prom-client';

/** prom-client's types name an enum; its metrics carry the type as this string, which the text format prints. */
const HISTOGRAM = 'histogram' as unknown as MetricType;

export interface HistogramChild {
  observe(value: number): void;
}

interface ChildData extends HistogramChild {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last entry counts those above every bound. */
  counts: number[];
  sum: number;
  count: number;
}

/** One map per label: a value leads to the next label's map, and at the last label to the child. */
type Level = Map<string, Level | ChildData>;

export class FastHistogram<T extends string> extends Histogram<T> {
  readonly #bounds: number[];
  readonly #labelNames: readonly T[];
  /** By the label values joined with newlines: what get() renders. */
  readonly #children = new Map<string, ChildData>();
  /** The same children, by one label value per level. */
  readonly #byValue: Level = new Map();
  readonly #metricName: string;
  readonly #help: string;

  constructor(configuration: HistogramConfiguration<T> & { buckets: number[]; labelNames: readonly T[] }) {
    super(configuration);
    this.#bounds = [...configuration.buckets].sort((a, b) => a - b);
    this.#labelNames = configuration.labelNames;
    this.#metricName = configuration.name;
    this.#help = configuration.help;
  }

  /**
   * The child for these label values (in labelNames order), made once and kept. Found again by
   * walking one map per label (#byValue), so a call builds no key string to hash.
   */
  child(...values: string[]): HistogramChild {
    // As deep as there are labels, whatever was passed: a missing value is ''.
    let level = this.#byValue;
    const last = this.#labelNames.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i] ?? '') as Level | undefined;
      if (!next) level.set(values[i] ?? '', (next = new Map()));
      level = next;
    }
    let child = level.get(values[last] ?? '') as ChildData | undefined;
    if (!child) {
      child = this.#newChild(values);
      level.set(values[last] ?? '', child);
    }
    return child;
  }

  #newChild(given: string[]): ChildData {
    const values = this.#labelNames.map((_, i) => given[i] ?? '');
    const key = values.join('\n');
    // Values containing newlines can join to a key made before: one child per key, as rendered.
    const known = this.#children.get(key);
    if (known) return known;
    const labels: Record<string, string> = {};
    this.#labelNames.forEach((name, i) => (labels[name] = values[i]!));
    const bounds = this.#bounds;
    const data: ChildData = {
      labels,
      counts: new Array<number>(bounds.length + 1).fill(0),
      sum: 0,
      count: 0,
      observe(value: number) {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        data.counts[i]!++;
        data.sum += value;
        data.count++;
      },
    };
    this.#children.set(key, data);
    return data;
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class's fields exist.
    if (#children in this) {
      this.#children.clear();
      this.#byValue.clear();
    }
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<T>>> {
    const values: MetricValueWithName<T>[] = [];
    const bucket = `${this.#metricName}_bucket`;
    for (const child of this.#children.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += child.counts[i]!;
        values.push({ labels: { le: bound, ...child.labels } as MetricValueWithName<T>['labels'], value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf', ...child.labels } as MetricValueWithName<T>['labels'], value: child.count, metricName: bucket });
      values.push({ labels: { ...child.labels } as MetricValueWithName<T>['labels'], value: child.sum, metricName: `${this.#metricName}_sum` });
      values.push({ labels: { ...child.labels } as MetricValueWithName<T>['labels'], value: child.count, metricName: `${this.#metricName}_count` });
    }
    // The fields prom-client's own get() returns (its declared type also names `collect`, which it never sets).
    return { name: this.#metricName, help: this.#help, type: HISTOGRAM, values, aggregator: 'sum' } as MetricObjectWithValues<MetricValueWithName<T>>;
  }

  /** What prom-client's Registry reads when it renders the text format. */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<T>>> {
    return this.get();
  }
}
