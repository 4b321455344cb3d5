//! Chat formats for models whose GGUF file carries no `tokenizer.chat_template`, written as
//! Jinja so that they render through the same path as a model's own template.

use super::Tokenizer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinTemplate {
    /// `<start_of_turn>user … <end_of_turn>`; the assistant is called `model`, and a system
    /// prompt is folded into the first user turn, since Gemma has no system role.
    Gemma,
    /// `<|im_start|>role … <|im_end|>` (SmolLM, Qwen).
    ChatMl,
    /// `<|start_header_id|>role<|end_header_id|> … <|eot_id|>`.
    Llama3,
}

const GEMMA: &str = r#"{{ bos_token }}
{%- if messages and messages[0].role == 'system' -%}
    {%- set first_user_prefix = messages[0].content ~ '\n\n' -%}
    {%- set turns = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = '' -%}
    {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
    {%- if (message.role == 'user') != (loop.index0 is even) -%}
        {{ raise_exception('Gemma conversations alternate user and assistant turns, starting with the user') }}
    {%- endif -%}
    {{ '<start_of_turn>' ~ ('model' if message.role == 'assistant' else message.role) ~ '\n' }}
    {{- (first_user_prefix if loop.first else '') ~ (message.content | trim) ~ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\n' }}
{%- endif -%}
"#;

const CHAT_ML: &str = r#"{%- for message in messages -%}
    {{ '<|im_start|>' ~ message.role ~ '\n' ~ message.content ~ '<|im_end|>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<|im_start|>assistant\n' }}
{%- endif -%}
"#;

const LLAMA3: &str = r#"{{ bos_token }}
{%- for message in messages -%}
    {{ '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\n\n' ~ (message.content | trim) ~ '<|eot_id|>' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif -%}
"#;

impl BuiltinTemplate {
    /// The format a model uses, from its architecture and the markup tokens its vocabulary has.
    pub fn detect(architecture: &str, tokenizer: &Tokenizer) -> Option<BuiltinTemplate> {
        if architecture.starts_with("gemma") {
            Some(BuiltinTemplate::Gemma)
        } else if tokenizer.token_to_id("<|im_start|>").is_some() {
            Some(BuiltinTemplate::ChatMl)
        } else if tokenizer.token_to_id("<|start_header_id|>").is_some() {
            Some(BuiltinTemplate::Llama3)
        } else {
            None
        }
    }

    pub fn source(self) -> &'static str {
        match self {
            BuiltinTemplate::Gemma => GEMMA,
            BuiltinTemplate::ChatMl => CHAT_ML,
            BuiltinTemplate::Llama3 => LLAMA3,
        }
    }
}
