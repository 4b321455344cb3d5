//! Bounds on what a model's vocabulary and chat template may ask of the tokenizer builder and
//! the template renderer, checked before the work they bound starts.

use std::time::Duration;

use crate::model::limits::MAX_VOCAB;

/// Tokens in a vocabulary (the model's own limit, so the two agree).
pub const MAX_TOKENS: usize = MAX_VOCAB as usize;
/// Bytes of one token's text. Real vocabularies stay under a few hundred bytes (runs of spaces
/// or dashes for code); SentencePiece trains with pieces of at most 16 characters.
pub const MAX_TOKEN_BYTES: usize = 1_024;
/// Byte-level BPE merges: a trained merge list has one merge per learned token.
pub const MAX_MERGES: usize = 2 * MAX_TOKENS;
/// Bytes hashed while finding every two-token split of every SentencePiece token (the sum of
/// length × splits). Gemma 3's 262,144 tokens cost about 20 million; a vocabulary of long shared
/// prefixes costs the square of its length and is refused instead of built.
pub const MAX_SPLIT_WORK: u64 = 1 << 27;
/// Bytes of a chat template's source. Real templates are a few KB (gpt-oss: 16 KB).
pub const MAX_TEMPLATE_BYTES: usize = 256 * 1024;
/// Template instructions per render: a fixed allowance plus some per message (a template spends
/// a bounded number of instructions on each; filters handle a message's text in one), so a long
/// conversation still renders and a template looping over huge ranges stops. Kept low because
/// one instruction may copy a long string: a loop growing a string costs the square of its steps.
pub const TEMPLATE_FUEL_BASE: u64 = 100_000;
pub const TEMPLATE_FUEL_PER_MESSAGE: u64 = 10_000;
/// Bytes a render may write: the conversation itself plus room for the markup around it.
pub const TEMPLATE_OUTPUT_BASE: usize = 1 << 20;
pub const TEMPLATE_OUTPUT_PER_INPUT_BYTE: usize = 4;
/// Address space a model's template may take in the sandbox's child, above what the executable
/// maps at start: far more than a real template needs (its output is capped at a few times the
/// conversation), far less than the machine has.
pub const TEMPLATE_RENDERER_MEMORY: u64 = 1 << 30;
/// How long a render in the sandbox's child may take before the child is killed. Real templates
/// render in milliseconds; fuel stops most loops long before this.
pub const TEMPLATE_RENDER_TIMEOUT: Duration = Duration::from_secs(10);
