// Small streaming statistics for the metrics columns: a ring of recent values for rolling
// percentiles, and a log-bucket histogram for run-to-date percentiles in constant memory.

/** Nearest-rank percentile (p in 0..100) of a sorted Float64Array or array. */
export function percentileSorted(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** The most recent `capacity` values. */
export class Ring {
  constructor(capacity) {
    this.values = new Float64Array(capacity);
    this.size = 0;
    this.next = 0;
  }

  push(v) {
    this.values[this.next] = v;
    this.next = (this.next + 1) % this.values.length;
    if (this.size < this.values.length) this.size += 1;
  }

  /** [p50, p99, ...] of what the ring holds, NaN when empty. */
  percentiles(ps) {
    const sorted = this.values.slice(0, this.size).sort();
    return ps.map((p) => percentileSorted(sorted, p));
  }
}

// Buckets 2% wide from 1 microsecond: bucket i holds values in [LOW * GROWTH^i, LOW * GROWTH^(i+1)).
const LOW = 1e-3;
const GROWTH = 1.02;
const NUM_BUCKETS = 1200;

/** Counts of values (ms) in 2%-wide log buckets; percentiles are accurate to about 2%. */
export class LogHistogram {
  constructor() {
    this.counts = new Uint32Array(NUM_BUCKETS);
    this.total = 0;
  }

  add(v) {
    const i = v <= LOW ? 0 : Math.floor(Math.log(v / LOW) / Math.log(GROWTH));
    this.counts[Math.min(NUM_BUCKETS - 1, i)] += 1;
    this.total += 1;
  }

  /** The upper edge of the bucket holding the nearest-rank p-th percentile. */
  percentile(p) {
    if (this.total === 0) return NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.total));
    let seen = 0;
    for (let i = 0; i < NUM_BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return LOW * GROWTH ** (i + 1);
    }
    return NaN;
  }
}
