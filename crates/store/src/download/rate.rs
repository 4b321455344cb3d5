use std::time::{Duration, Instant};

/// Download speed, smoothed over half-second windows, and the time left at that speed.
#[derive(Debug)]
pub struct RateMeter {
    window_start: Instant,
    window_bytes: u64,
    bytes_per_second: Option<f64>,
}

impl RateMeter {
    const WINDOW: Duration = Duration::from_millis(500);
    /// The weight of the newest window: steady enough to read, quick to follow a change.
    const NEWEST_WEIGHT: f64 = 0.3;

    pub fn new() -> RateMeter {
        RateMeter { window_start: Instant::now(), window_bytes: 0, bytes_per_second: None }
    }

    /// Counts `bytes` more received.
    pub fn add(&mut self, bytes: u64) {
        self.window_bytes += bytes;
        let elapsed = self.window_start.elapsed();
        if elapsed >= RateMeter::WINDOW {
            let newest = self.window_bytes as f64 / elapsed.as_secs_f64();
            self.bytes_per_second = Some(match self.bytes_per_second {
                Some(speed) => speed + RateMeter::NEWEST_WEIGHT * (newest - speed),
                None => newest,
            });
            self.window_start = Instant::now();
            self.window_bytes = 0;
        }
    }

    /// Bytes per second; 0 until the first window is over.
    pub fn bytes_per_second(&self) -> f64 {
        self.bytes_per_second.unwrap_or(0.0)
    }

    /// The time `remaining` bytes take at the current speed, once there is one.
    pub fn eta(&self, remaining: u64) -> Option<Duration> {
        let speed = self.bytes_per_second.filter(|&speed| speed > 0.0)?;
        Duration::try_from_secs_f64(remaining as f64 / speed).ok()
    }
}

impl Default for RateMeter {
    fn default() -> RateMeter {
        RateMeter::new()
    }
}
