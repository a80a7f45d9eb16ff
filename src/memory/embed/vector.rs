//! Vectors as Butler stores and compares them: L2-normalised, then one signed byte per
//! dimension (a quarter of the space of `f32`, short enough to stay inside a database row), and
//! cosine similarity computed on those bytes with integer arithmetic.
//!
//! Pure functions: this file must never do I/O.

/// The bytes of `v`: normalised, then scaled so its largest component is ±127. Empty for a
/// vector that is all zeros (or holds a NaN): such a text is stored without a usable vector.
pub fn encode(v: &[f32]) -> Vec<u8> {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if !(max.is_finite() && max > 0.0) || v.iter().any(|x| !x.is_finite()) {
        return Vec::new();
    }
    let scale = 127.0 / max;
    v.iter().map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8 as u8).collect()
}

/// Cosine similarity of two encoded vectors, in [-1, 1]; `None` when their lengths differ or
/// either is empty.
pub fn similarity(a: &[u8], b: &[u8]) -> Option<f32> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (mut dot, mut aa, mut bb) = (0i64, 0i64, 0i64);
    // Chunks of 64 keep the sums in i32 (64 * 127 * 127 fits) so the compiler can vectorise.
    for (ca, cb) in a.chunks(64).zip(b.chunks(64)) {
        let (mut d, mut x, mut y) = (0i32, 0i32, 0i32);
        for (&p, &q) in ca.iter().zip(cb) {
            let (p, q) = (i32::from(p as i8), i32::from(q as i8));
            d += p * q;
            x += p * p;
            y += q * q;
        }
        dot += i64::from(d);
        aa += i64::from(x);
        bb += i64::from(y);
    }
    if aa == 0 || bb == 0 {
        return None;
    }
    Some((dot as f64 / ((aa as f64).sqrt() * (bb as f64).sqrt())) as f32)
}

/// The keys of the `k` rows most similar to `query` at `min` or above, most similar first (ties
/// by key, the greatest, so the newest id, first).
pub fn nearest<K: Clone + Ord>(query: &[u8], rows: &[(K, Vec<u8>)], min: f32, k: usize) -> Vec<(K, f32)> {
    let mut scored: Vec<(K, f32)> =
        rows.iter().filter_map(|(id, v)| similarity(query, v).filter(|s| *s >= min).map(|s| (id.clone(), s))).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    scored.truncate(k);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(dims: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b))
    }

    #[test]
    fn bytes_keep_the_cosine_within_a_hundredth() {
        for (dims, s1, s2) in [(64, 1, 2), (1536, 3, 4), (768, 5, 5), (3, 7, 9)] {
            let (a, b) = (unit(dims, s1), unit(dims, s2));
            let got = similarity(&encode(&a), &encode(&b)).unwrap();
            assert!((got - cosine(&a, &b)).abs() < 0.01, "dims {dims}: {got} vs {}", cosine(&a, &b));
        }
    }

    #[test]
    fn edge_cases() {
        let cases: &[(&[f32], &[f32], Option<f32>)] = &[
            (&[1.0, 0.0], &[1.0, 0.0], Some(1.0)),
            (&[1.0, 0.0], &[-1.0, 0.0], Some(-1.0)),
            (&[1.0, 0.0], &[0.0, 1.0], Some(0.0)),
            (&[1.0, 0.0], &[1.0, 0.0, 0.0], None),
            (&[0.0, 0.0], &[1.0, 0.0], None),
            (&[f32::NAN, 1.0], &[1.0, 0.0], None),
            (&[], &[], None),
        ];
        for (a, b, want) in cases {
            assert_eq!(similarity(&encode(a), &encode(b)), *want, "{a:?} {b:?}");
        }
    }

    #[test]
    fn nearest_ranks_filters_and_cuts() {
        let q = encode(&[1.0, 0.0]);
        let rows = vec![
            (1, encode(&[0.0, 1.0])),
            (2, encode(&[1.0, 1.0])),
            (3, encode(&[1.0, 0.1])),
            (4, encode(&[1.0, 0.0, 0.0])),
            (5, encode(&[1.0, 1.0])),
        ];
        let ids = |v: Vec<(i64, f32)>| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(nearest(&q, &rows, 0.3, 10)), vec![3, 5, 2]);
        assert_eq!(ids(nearest(&q, &rows, 0.3, 2)), vec![3, 5]);
        assert_eq!(ids(nearest(&q, &rows, 0.99, 10)), vec![3]);
    }
}
