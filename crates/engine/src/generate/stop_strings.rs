/// Streams text while watching for stop strings: text that could still turn into a stop
/// string is held back until it either completes one (and is dropped) or cannot.
pub struct StopStringFilter {
    stops: Vec<String>,
    pending: String,
}

/// What the filter lets through for one piece of generated text.
#[derive(Debug, PartialEq, Eq)]
pub struct Filtered {
    /// Text that is safe to show now.
    pub text: String,
    /// A stop string was completed: generation ends, the stop string is not shown.
    pub stopped: bool,
}

impl StopStringFilter {
    pub fn new(stops: &[String]) -> Self {
        Self { stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(), pending: String::new() }
    }

    pub fn push(&mut self, piece: &str) -> Filtered {
        self.pending.push_str(piece);
        if let Some(at) = self.stops.iter().filter_map(|stop| self.pending.find(stop.as_str())).min() {
            let text = self.pending[..at].to_string();
            self.pending.clear();
            return Filtered { text, stopped: true };
        }
        let keep = self.longest_stop_prefix_suffix();
        let emit_len = self.pending.len() - keep;
        let text = self.pending[..emit_len].to_string();
        self.pending.drain(..emit_len);
        Filtered { text, stopped: false }
    }

    /// Whatever was held back, once generation has ended for another reason.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    /// Length of the longest suffix of `pending` that is a proper prefix of some stop string.
    fn longest_stop_prefix_suffix(&self) -> usize {
        let mut best = 0;
        for stop in &self.stops {
            for (start, _) in self.pending.char_indices() {
                let suffix = &self.pending[start..];
                if suffix.len() > best && stop.starts_with(suffix) {
                    best = suffix.len();
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_a_possible_stop_and_releases_it_when_it_diverges() {
        let mut filter = StopStringFilter::new(&["</end>".to_string()]);
        assert_eq!(filter.push("hello </e"), Filtered { text: "hello ".into(), stopped: false });
        assert_eq!(filter.push("x"), Filtered { text: "</ex".into(), stopped: false });
    }

    #[test]
    fn stops_across_pieces_and_drops_the_stop_string() {
        let mut filter = StopStringFilter::new(&["User:".to_string(), "###".to_string()]);
        assert_eq!(filter.push("answer.\nUs").text, "answer.\n");
        assert_eq!(filter.push("er: more"), Filtered { text: String::new(), stopped: true });
    }

    #[test]
    fn finish_flushes_held_text() {
        let mut filter = StopStringFilter::new(&["abc".to_string()]);
        assert_eq!(filter.push("xab").text, "x");
        assert_eq!(filter.finish(), "ab");
    }

    #[test]
    fn no_stops_passes_everything() {
        let mut filter = StopStringFilter::new(&[]);
        assert_eq!(filter.push("é✓"), Filtered { text: "é✓".into(), stopped: false });
    }
}
