//! The arithmetic kernels the vector index and the token vectors share: below both, so
//! neither imports the other for them.

/// The dot product of two rows of equal length, in eight lanes (so that it vectorizes;
/// the lane order is fixed, so the result is deterministic).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a8, a_tail) = a.as_chunks::<8>();
    let (b8, b_tail) = b.as_chunks::<8>();
    let mut lanes = [0f32; 8];
    for (x, y) in a8.iter().zip(b8) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    let [l0, l1, l2, l3, l4, l5, l6, l7] = lanes;
    ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)) + tail
}

#[cfg(test)]
mod tests {
    use super::dot;

    /// A small deterministic normal-ish generator (xorshift, summed uniforms).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 40) as f32 / (1u64 << 24) as f32
        }

        fn normal(&mut self) -> f32 {
            (0..4).map(|_| self.next()).sum::<f32>() - 2.0
        }
    }

    #[test]
    fn dot_matches_a_plain_sum() {
        let mut rng = Rng(5);
        for dim in [1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
            let b: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
            let plain: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-3);
        }
    }
}
