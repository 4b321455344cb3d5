//! The quant picker: a repository's GGUF files as the models they make (split parts
//! together), labelled by quantization, and which of them fits a memory budget.

mod choices;
mod file_name;
mod fit;

pub use choices::{gguf_choices, GgufChoice};
pub use file_name::{quantization_label, split_part, SplitPart};
pub use fit::{recommend, Fit};
