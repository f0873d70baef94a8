//! [`LatencyHistogram`]: the runtime's retrieval latencies in fixed memory, bucketed on a
//! log scale as HDR histograms are, so that a percentile is within 1/128 of the exact one
//! however many latencies were recorded.
//!
//! Values below 128 get a bucket each. Above, every power of two `[2^k, 2^(k+1))` is split
//! into 64 buckets of width `2^(k-6)`: six significant bits, so a bucket is at most 1/64 of
//! its lower bound wide, and its midpoint is within 1/128 of any value in it. 3,776 buckets
//! cover every `u64`, in 30,208 bytes allocated once.

/// Significant bits kept of a value: each power of two is split into `2^SIGNIFICANT_BITS`
/// buckets.
const SIGNIFICANT_BITS: u32 = 6;
/// Buckets per power of two.
const PER_POWER: usize = 1 << SIGNIFICANT_BITS;
/// Every bucket: 64 exact ones below 64, then 64 for each power of two from 2^6 to 2^63.
const BUCKETS: usize = PER_POWER + (64 - SIGNIFICANT_BITS as usize) * PER_POWER;

/// Counts of latencies in log-scaled buckets: constant memory, any number of values.
#[derive(Clone)]
pub(crate) struct LatencyHistogram {
    /// One count per bucket, [`BUCKETS`] of them, allocated once.
    counts: Box<[u64]>,
    /// Values recorded.
    total: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
        }
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// The bucket of `value`: `value` itself below 128; above, the power of two's bucket
/// offset and the value's top seven bits.
fn bucket(value: u64) -> usize {
    let log2 = 63u32.saturating_sub(value.leading_zeros());
    let shift = log2.saturating_sub(SIGNIFICANT_BITS);
    // `value >> shift` is below 128 (its top bit is bit 6 at most), so the index is at most
    // 57 * 64 + 127 = 3775, the last bucket.
    (shift as usize) * PER_POWER + (value >> shift) as usize
}

/// The lowest value of bucket `index` and the bucket's width.
fn bounds(index: usize) -> (u64, u64) {
    let shift = (index / PER_POWER).saturating_sub(1);
    let top = (index - shift * PER_POWER) as u64;
    (top << shift, 1u64 << shift)
}

impl LatencyHistogram {
    /// Counts one latency; a negative one (a clock that went back) counts as 0.
    pub(crate) fn record(&mut self, micros: i64) {
        let value = u64::try_from(micros).unwrap_or(0);
        if let Some(count) = self.counts.get_mut(bucket(value)) {
            *count = count.saturating_add(1);
            self.total = self.total.saturating_add(1);
        }
    }

    /// How many latencies were recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.total
    }

    /// The bytes the histogram holds, on the heap and inline: the same from the first value
    /// to the last.
    #[cfg(test)]
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.counts)
    }

    /// The `quantile` (0 to 1) of the latencies recorded, nearest-rank as
    /// `sorted[floor(n * quantile)]` (the upper median for 0.5), estimated by its bucket's
    /// midpoint: `|estimate - exact| <= exact / 128`, and exact below 128. `None` before any
    /// value.
    pub(crate) fn percentile(&self, quantile: f64) -> Option<u64> {
        let last = self.total.checked_sub(1)?;
        // An f64 rank is exact up to 2^53 values, far beyond any runtime's life.
        let rank = ((self.total as f64) * quantile.clamp(0.0, 1.0)) as u64;
        let rank = rank.min(last);
        let mut seen = 0u64;
        for (index, count) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*count);
            if seen > rank {
                let (low, width) = bounds(index);
                return Some(low + (width - 1) / 2);
            }
        }
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        assert_eq!(BUCKETS, 3_776);
        for value in (0..5_000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let (low, width) = bounds(bucket(value));
            assert!(
                low <= value && value - low < width,
                "{value}: {low} + {width}"
            );
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        for index in 1..BUCKETS {
            let (low, width) = bounds(index);
            let (previous, previous_width) = bounds(index - 1);
            assert_eq!(previous + previous_width, low, "bucket {index}");
            assert_eq!(bucket(low), index);
            assert_eq!(bucket(low + (width - 1)), index);
        }
        for value in 0..128 {
            assert_eq!(
                bounds(bucket(value)),
                (value, 1),
                "values below 128 are exact"
            );
        }
    }

    #[test]
    fn an_empty_histogram_has_no_percentile_and_negatives_count_as_zero() {
        let mut histogram = LatencyHistogram::default();
        assert_eq!(histogram.percentile(0.5), None);
        histogram.record(-5);
        assert_eq!((histogram.len(), histogram.percentile(0.5)), (1, Some(0)));
    }

    #[test]
    fn memory_stays_the_same_over_a_million_latencies() {
        let mut histogram = LatencyHistogram::default();
        let before = histogram.memory_bytes();
        for n in 0..1_000_000i64 {
            histogram.record(n.wrapping_mul(7_919) % 3_000_000);
        }
        assert_eq!(histogram.memory_bytes(), before);
        assert_eq!(histogram.len(), 1_000_000);
        assert!(before < 32 * 1024, "{before} bytes");
    }

    /// Latencies of every magnitude: mostly microseconds to seconds, some of any size.
    fn latencies() -> impl Strategy<Value = Vec<u64>> {
        let one = prop_oneof![
            4 => 0u64..200,
            4 => 0u64..5_000_000,
            1 => any::<u64>(),
        ];
        prop::collection::vec(one, 1..400)
    }

    proptest! {
        /// Any percentile is within 1/128 of the exact nearest-rank percentile, and exact
        /// below 128.
        #[test]
        fn percentiles_are_within_the_bound_of_the_exact_ones(
            values in latencies(),
            quantile in 0.0f64..=1.0,
        ) {
            let mut histogram = LatencyHistogram::default();
            for value in &values {
                histogram.record(i64::try_from(*value).unwrap_or(i64::MAX));
            }
            let mut sorted: Vec<u64> = values
                .iter()
                .map(|v| u64::try_from(i64::try_from(*v).unwrap_or(i64::MAX)).unwrap())
                .collect();
            sorted.sort_unstable();
            let rank = ((sorted.len() as f64 * quantile) as usize).min(sorted.len() - 1);
            let exact = sorted[rank];
            let estimate = histogram.percentile(quantile).unwrap();
            let error = u128::from(estimate.abs_diff(exact));
            prop_assert!(
                error * 128 <= u128::from(exact),
                "estimate {estimate}, exact {exact}"
            );
            if exact < 128 {
                prop_assert_eq!(estimate, exact);
            }
        }
    }
}
