use std::time::Duration;

/// How often and how patiently a download is retried after a dropped connection, a stall
/// or a server error.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in a row that bring no byte before giving up; an attempt that brings bytes
    /// starts the count again.
    pub max_attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 8,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `failures` (1-based): doubling from `first_backoff`.
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(16);
        self.first_backoff.saturating_mul(1 << doublings).min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (1..=7).map(|failures| policy.backoff(failures).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(30));
    }
}
