use serde::Serialize;

use super::GgufChoice;

/// How a model's memory need compares with this machine's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    Fits,
    /// Within the budget but close to it: the estimate is an estimate, and other programs
    /// share the memory.
    Tight,
    TooBig,
}

impl Fit {
    /// Past this share of the budget a model is tight.
    const TIGHT_FROM_PERCENT: u128 = 90;

    pub fn of(needed: u64, budget: u64) -> Fit {
        if needed > budget {
            Fit::TooBig
        } else if u128::from(needed) * 100 > u128::from(budget) * Fit::TIGHT_FROM_PERCENT {
            Fit::Tight
        } else {
            Fit::Fits
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Fit::Fits => "fits",
            Fit::Tight => "tight",
            Fit::TooBig => "too big",
        }
    }
}

/// The best choice for `budget`: the largest quantization that fits (more bits, better
/// answers), a full-precision copy only when no quantization fits, and a tight one only when
/// nothing fits comfortably. `needed` gives a choice's memory need in bytes.
pub fn recommend(
    choices: &[GgufChoice],
    budget: u64,
    needed: impl Fn(&GgufChoice) -> u64,
) -> Option<&GgufChoice> {
    let best_with = |fit: Fit, unquantized: bool| {
        choices
            .iter()
            .filter(|choice| choice.is_unquantized() == unquantized && Fit::of(needed(choice), budget) == fit)
            .max_by_key(|choice| needed(choice))
    };
    [(Fit::Fits, false), (Fit::Fits, true), (Fit::Tight, false), (Fit::Tight, true)]
        .into_iter()
        .find_map(|(fit, unquantized)| best_with(fit, unquantized))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(quantization: &str, size: u64) -> GgufChoice {
        GgufChoice {
            quantization: Some(quantization.to_string()),
            name: format!("m-{quantization}.gguf"),
            files: Vec::new(),
            size,
        }
    }

    #[test]
    fn verdicts_have_a_margin() {
        assert_eq!(Fit::of(80, 100), Fit::Fits);
        assert_eq!(Fit::of(90, 100), Fit::Fits);
        assert_eq!(Fit::of(95, 100), Fit::Tight);
        assert_eq!(Fit::of(100, 100), Fit::Tight);
        assert_eq!(Fit::of(101, 100), Fit::TooBig);
        assert_eq!(Fit::of(u64::MAX, u64::MAX - 1), Fit::TooBig);
    }

    #[test]
    fn the_largest_fitting_quantization_is_recommended() {
        let choices = [choice("Q4_K_M", 450), choice("Q6_K", 650), choice("Q8_0", 850), choice("F16", 1600)];
        let size = |choice: &GgufChoice| choice.size;
        assert_eq!(recommend(&choices, 10_000, size).unwrap().label(), "Q8_0");
        assert_eq!(recommend(&choices, 800, size).unwrap().label(), "Q6_K");
        assert_eq!(recommend(&choices, 460, size).unwrap().label(), "Q4_K_M");
        assert!(recommend(&choices, 400, size).is_none());
        let only_f16 = [choice("F16", 1600)];
        assert_eq!(recommend(&only_f16, 10_000, size).unwrap().label(), "F16");
    }
}
