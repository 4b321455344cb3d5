use std::fmt;

/// A byte count for people: `253.1 MB`, `912 B` (decimal units, as disk tools report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
        if self.0 < 1000 {
            return write!(f, "{} B", self.0);
        }
        let mut value = self.0 as f64 / 1000.0;
        let mut unit = 0;
        while value >= 1000.0 && unit + 1 < UNITS.len() {
            value /= 1000.0;
            unit += 1;
        }
        write!(f, "{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSize;

    #[test]
    fn picks_the_largest_unit_below_1000() {
        assert_eq!(ByteSize(0).to_string(), "0 B");
        assert_eq!(ByteSize(999).to_string(), "999 B");
        assert_eq!(ByteSize(1000).to_string(), "1.0 kB");
        assert_eq!(ByteSize(253_113_024).to_string(), "253.1 MB");
        assert_eq!(ByteSize(5_000_000_000).to_string(), "5.0 GB");
    }
}
