//! `view --stats`: per tensor, the exact count, minimum, maximum, mean and
//! NaN and infinity counts of its values, and a histogram of a systematic
//! sample of them, computed in one streaming pass with bounded memory
//! (`TensorRef::for_each_value_chunk`: one chunk of values at a time,
//! dequantized for quantized tensors). Counts, extremes and NaN/infinity
//! counts are exact; the mean is summed in f64.

use hurray::views::Values;
use serde::Serialize;

/// A value as handed over: an `f32` (every float type of at most 32 bits,
/// exactly) or an `f64`; summed in f64 either way.
trait Lane: Copy {
    fn to_f64(self) -> f64;
}

impl Lane for f32 {
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Lane for f64 {
    fn to_f64(self) -> f64 {
        self
    }
}

/// The most values kept for a tensor's histogram: every k-th value, k chosen
/// from the tensor's count so that at most this many are kept.
pub(crate) const SAMPLE: u64 = 4096;
/// Bins of a histogram.
pub(crate) const BINS: usize = 16;

/// A tensor's summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Stats {
    /// Values read (stored values of a sparse tensor).
    pub(crate) count: u64,
    /// Over the finite values; `None` when there are none.
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    pub(crate) mean: Option<f64>,
    pub(crate) nan: u64,
    pub(crate) inf: u64,
    /// Counts of the sampled finite values in `BINS` equal bins from `min`
    /// to `max`.
    pub(crate) histogram: Vec<u64>,
    /// How many values the histogram counts.
    pub(crate) sampled: u64,
}

/// A summary being accumulated: over one tensor, or the pieces of one.
#[derive(Debug, Clone)]
pub(crate) struct Accumulator {
    count: u64,
    finite: u64,
    min: f64,
    max: f64,
    sum: f64,
    nan: u64,
    inf: u64,
    /// Keep every `stride`-th value (counted over all values seen).
    stride: u64,
    sample: Vec<f64>,
}

impl Accumulator {
    /// For a tensor of `total` values.
    pub(crate) fn new(total: u64) -> Self {
        Accumulator {
            count: 0,
            finite: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            sum: 0.0,
            nan: 0,
            inf: 0,
            stride: total.div_ceil(SAMPLE).max(1),
            sample: Vec::new(),
        }
    }

    /// Counts a chunk of values.
    pub(crate) fn add(&mut self, values: Values<'_>) {
        match values {
            Values::F32(v) => self.add_lanes(v),
            Values::F64(v) => self.add_lanes(v),
        }
    }

    fn add_lanes<T: Lane>(&mut self, values: &[T]) {
        // The common case first: every value finite. Four independent f64
        // lanes, so the loop vectorizes; a NaN compares false and is passed
        // by, and a NaN or an infinity shows in the sum, which sends the
        // chunk down the careful path below.
        let (mut min, mut max, mut sum) = ([f64::INFINITY; 4], [f64::NEG_INFINITY; 4], [0.0; 4]);
        let mut quads = values.chunks_exact(4);
        for q in &mut quads {
            // As an array, so the lanes' indices need no checks.
            let Ok(q) = <&[T; 4]>::try_from(q) else {
                continue;
            };
            for l in 0..4 {
                let v = q[l].to_f64();
                min[l] = if v < min[l] { v } else { min[l] };
                max[l] = if v > max[l] { v } else { max[l] };
                sum[l] += v;
            }
        }
        for v in quads.remainder().iter().map(|v| v.to_f64()) {
            min[0] = if v < min[0] { v } else { min[0] };
            max[0] = if v > max[0] { v } else { max[0] };
            sum[0] += v;
        }
        let total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
        if total.is_finite() {
            self.finite += values.len() as u64;
            self.sum += total;
            self.min = min.iter().fold(self.min, |a, &b| a.min(b));
            self.max = max.iter().fold(self.max, |a, &b| a.max(b));
        } else {
            for v in values.iter().map(|v| v.to_f64()) {
                if v.is_nan() {
                    self.nan += 1;
                } else if v.is_infinite() {
                    self.inf += 1;
                } else {
                    self.finite += 1;
                    self.sum += v;
                    self.min = self.min.min(v);
                    self.max = self.max.max(v);
                }
            }
        }
        // The sample: the values at positions 0, stride, 2 stride, ... of
        // the whole tensor.
        let first = (self.stride - self.count % self.stride) % self.stride;
        self.sample.extend(
            values
                .iter()
                .skip(first as usize)
                .step_by(self.stride as usize)
                .map(|v| v.to_f64())
                .filter(|v| v.is_finite()),
        );
        self.count += values.len() as u64;
    }

    /// The summary: exact counts, extremes and mean; the histogram of the
    /// sample (at most `SAMPLE` values: every `stride`-th of the values the
    /// accumulator was made for).
    pub(crate) fn finish(self) -> Stats {
        let finite = self.finite > 0;
        let mut histogram = vec![0u64; BINS];
        if finite {
            // Halves, so that the width of values near f64's limits does
            // not overflow to infinity.
            let (lo, width) = (self.min / 2.0, self.max / 2.0 - self.min / 2.0);
            for v in &self.sample {
                let bin = if width > 0.0 {
                    (((v / 2.0 - lo) / width) * BINS as f64) as usize
                } else {
                    0
                };
                histogram[bin.min(BINS - 1)] += 1;
            }
        }
        Stats {
            count: self.count,
            min: finite.then_some(self.min),
            max: finite.then_some(self.max),
            mean: finite.then(|| self.sum / self.finite as f64),
            nan: self.nan,
            inf: self.inf,
            sampled: histogram.iter().sum(),
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_extremes_mean_and_specials_are_exact() {
        let values: Vec<f64> = (0..10_000).map(f64::from).collect();
        let mut a = Accumulator::new(10_003);
        a.add(Values::F64(&values[..3333]));
        a.add(Values::F64(&values[3333..]));
        a.add(Values::F64(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY]));
        let s = a.finish();
        assert_eq!(s.count, 10_003);
        assert_eq!((s.min, s.max), (Some(0.0), Some(9999.0)));
        assert_eq!(s.mean, Some(4999.5));
        assert_eq!((s.nan, s.inf), (1, 2));
        // Every 3rd value of 10,003 (stride ceil(10003 / 4096)): 3,334 kept.
        assert_eq!(s.sampled, 3334);
        // An even spread: every bin within one value of its share.
        let share = 3334.0 / BINS as f64;
        assert!(
            s.histogram.iter().all(|&c| (c as f64 - share).abs() <= 2.0),
            "{:?}",
            s.histogram
        );
    }

    #[test]
    fn no_finite_value_has_no_extremes() {
        let mut a = Accumulator::new(2);
        a.add(Values::F32(&[f32::NAN, f32::NAN]));
        let s = a.finish();
        assert_eq!((s.min, s.max, s.mean, s.nan), (None, None, None, 2));
        assert_eq!(s.histogram, vec![0; BINS]);
        let empty = Accumulator::new(0).finish();
        assert_eq!((empty.count, empty.min), (0, None));
    }

    #[test]
    fn pieces_added_in_turn_are_the_whole() {
        let mut whole = Accumulator::new(8);
        whole.add(Values::F32(&[1.0, -3.0, 5.0, 2.0, 8.0, 0.5, -1.0, 4.0]));
        let mut pieces = Accumulator::new(8);
        pieces.add(Values::F64(&[1.0, -3.0, 5.0, 2.0]));
        pieces.add(Values::F32(&[8.0, 0.5, -1.0, 4.0]));
        assert_eq!(whole.finish(), pieces.finish());
    }

    #[test]
    fn values_near_the_limits_of_f64_spread_over_the_bins() {
        let mut a = Accumulator::new(2);
        a.add(Values::F64(&[-1e308, 1e308]));
        let s = a.finish();
        assert_eq!((s.histogram[0], s.histogram[BINS - 1]), (1, 1));
    }
}
