//! Comparing what the engine computed with a reference.

/// The index of the largest value, ties to the lowest index (as greedy sampling picks).
pub fn argmax(values: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v > values[best] {
            best = i;
        }
    }
    best as u32
}

/// The largest difference between two vectors of the same length.
pub fn max_abs_diff(expected: &[f32], actual: &[f32]) -> f32 {
    assert_eq!(expected.len(), actual.len(), "lengths differ");
    expected.iter().zip(actual).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// Every value within `abs_tol + rel_tol · |expected|` of the f64 reference.
pub fn assert_close(label: &str, actual: &[f32], expected: &[f64], abs_tol: f64, rel_tol: f64) {
    assert_eq!(actual.len(), expected.len(), "{label}: length");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let tolerance = abs_tol + rel_tol * e.abs();
        assert!(
            (f64::from(a) - e).abs() <= tolerance,
            "{label}[{i}]: got {a}, expected {e} (tolerance {tolerance})"
        );
    }
}
