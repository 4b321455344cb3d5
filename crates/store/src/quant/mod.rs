//! The quant picker: a repository's GGUF files as the models they make (split parts
//! together), labelled by quantization, their estimated memory footprint, and which of them
//! fits a memory budget.

mod choices;
mod estimate;
mod file_name;
mod fit;

pub use choices::{gguf_choices, GgufChoice};
pub use estimate::{
    assess_choices, estimate_footprint, AssessedChoice, PlannedSession, DEFAULT_PLANNED_CONTEXT,
};
pub use file_name::{quantization_label, split_part, SplitPart};
pub use fit::{recommend, Fit};
