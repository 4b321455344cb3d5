use std::{
    thread,
    time::{Duration, Instant},
};

use doppler_engine::CancelToken;

/// Sleeps for `duration`, waking early when `cancel` is cancelled: whether it was.
pub(crate) fn sleep_unless_cancelled(cancel: &CancelToken, duration: Duration) -> bool {
    const SLICE: Duration = Duration::from_millis(50);
    let deadline = Instant::now() + duration;
    while !cancel.is_cancelled() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        thread::sleep(left.min(SLICE));
    }
    true
}
