use std::borrow::Cow;

use minijinja::{context, Environment, ErrorKind};
use serde::{Deserialize, Serialize};

use crate::gguf::{GgufError, GgufFile};

use super::builtin_templates::BuiltinTemplate;
use super::capped_output::CappedOutput;
use super::limits::{
    MAX_TEMPLATE_BYTES, TEMPLATE_FUEL_BASE, TEMPLATE_FUEL_PER_MESSAGE, TEMPLATE_OUTPUT_BASE,
    TEMPLATE_OUTPUT_PER_INPUT_BYTE,
};
use super::template_sandbox;
use super::{ChatMessage, Role, Tokenizer, TokenizerError};

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("reading the chat template metadata: {0}")]
    Metadata(#[from] GgufError),
    #[error("the chat template does not compile: {0}")]
    Syntax(#[source] minijinja::Error),
    /// The template's own failure (`raise_exception`, a missing key), as minijinja words it: a
    /// string, so that a render in the sandbox's child reports the same text.
    #[error("rendering the chat template: {0}")]
    Render(String),
    #[error("the chat template is {bytes} bytes, over the limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("the chat template ran out of fuel: rendering took more than {fuel} instructions (does it loop over huge ranges?)")]
    OutOfFuel { fuel: u64 },
    #[error("the chat template wrote more than {limit} bytes for a conversation of {input_bytes} bytes")]
    OutputTooLarge { limit: usize, input_bytes: usize },
    #[error("the chat template wrote invalid UTF-8")]
    InvalidOutput,
    #[error("the chat template went over its renderer's memory limit of {limit_mib} MiB and was stopped ({ending}); does it grow strings or lists without end?")]
    MemoryLimit { limit_mib: u64, ending: String },
    #[error("the chat template took more than {seconds} s to render and was stopped")]
    TimedOut { seconds: u64 },
    #[error("running the chat template renderer: {0}")]
    Renderer(#[source] std::io::Error),
    #[error("no chat format for this model: {reason}")]
    NoTemplate { reason: String },
    #[error("tokenizing the rendered chat: {0}")]
    Encode(#[from] TokenizerError),
}

/// Where a model's chat format comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateOrigin {
    /// `tokenizer.chat_template` from the GGUF file.
    Model,
    Builtin(BuiltinTemplate),
    /// Neither: rendering fails with [`TemplateError::NoTemplate`]; raw prompts still work.
    Missing,
}

const TEMPLATE_NAME: &str = "chat";
const TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// A model's chat template, rendered with minijinja the way Hugging Face renders it with Jinja2
/// (trimmed blocks, Python string methods such as `.strip()`, `raise_exception`).
///
/// The template is compiled here, so a syntax error picks the fallback when the model loads.
/// In a process that installed the sandbox ([`sandbox_chat_templates`](super::sandbox_chat_templates)),
/// a model's own template renders in the sandbox's child from its source, compiled there by
/// the same code; built-in templates, which are ours, render here.
#[derive(Debug)]
pub struct ChatTemplate {
    environment: Environment<'static>,
    source: String,
    origin: TemplateOrigin,
    /// Why there is no template, for [`TemplateOrigin::Missing`].
    missing_reason: String,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// The GGUF file's own template when it has one, else the built-in format its architecture
    /// or vocabulary points to. A template over the size limit, or one that runs out of fuel or
    /// output rendering a short conversation, is refused: such a file asks for too much.
    pub fn for_model(gguf: &GgufFile, tokenizer: &Tokenizer) -> Result<ChatTemplate, TemplateError> {
        let source = gguf.metadata().get_str(TEMPLATE_KEY)?;
        if let Some(source) = source.filter(|s| s.len() > MAX_TEMPLATE_BYTES) {
            return Err(TemplateError::TooLarge { bytes: source.len(), limit: MAX_TEMPLATE_BYTES });
        }
        let template = Self::select(gguf.architecture()?, source, tokenizer);
        if template.origin == TemplateOrigin::Model {
            template.probe()?;
        }
        Ok(template)
    }

    /// Renders a short conversation to find templates that exhaust their fuel or output. Other
    /// errors are the template's own business (many refuse some orders of roles) and pass.
    fn probe(&self) -> Result<(), TemplateError> {
        let message = |role: Role| ChatMessage { role, content: "Hello.".to_string() };
        let conversation =
            [message(Role::System), message(Role::User), message(Role::Assistant), message(Role::User)];
        for messages in [&conversation[1..2], &conversation[..]] {
            match self.render(messages, true) {
                Err(error) if error.is_resource_limit() => return Err(error),
                _ => {}
            }
        }
        Ok(())
    }

    /// `model_template` when given and it compiles, else a built-in format detected from
    /// `architecture` and the vocabulary, else a template that refuses to render. Never fails,
    /// so that a model whose chat format is unusable still loads for raw prompts.
    pub fn select(architecture: &str, model_template: Option<&str>, tokenizer: &Tokenizer) -> ChatTemplate {
        let mut missing_reason = "the model has no chat template".to_string();
        if let Some(source) = model_template {
            match Self::compile(TemplateOrigin::Model, source, tokenizer) {
                Ok(template) => return template,
                Err(error) => {
                    tracing::warn!("{error}; falling back to a built-in chat format");
                    missing_reason = error.to_string();
                }
            }
        }
        if let Some(builtin) = BuiltinTemplate::detect(architecture, tokenizer) {
            return Self::builtin(builtin, tokenizer);
        }
        let mut template =
            Self::compile(TemplateOrigin::Missing, "", tokenizer).expect("an empty template compiles");
        template.missing_reason =
            format!("{missing_reason} and no built-in format matches architecture '{architecture}'");
        template
    }

    pub fn builtin(builtin: BuiltinTemplate, tokenizer: &Tokenizer) -> ChatTemplate {
        Self::compile(TemplateOrigin::Builtin(builtin), builtin.source(), tokenizer)
            .expect("built-in templates compile")
    }

    pub fn from_source(source: &str, tokenizer: &Tokenizer) -> Result<ChatTemplate, TemplateError> {
        Self::compile(TemplateOrigin::Model, source, tokenizer)
    }

    fn compile(
        origin: TemplateOrigin,
        source: &str,
        tokenizer: &Tokenizer,
    ) -> Result<ChatTemplate, TemplateError> {
        if source.len() > MAX_TEMPLATE_BYTES {
            return Err(TemplateError::TooLarge { bytes: source.len(), limit: MAX_TEMPLATE_BYTES });
        }
        let environment = compile_environment(source).map_err(TemplateError::Syntax)?;
        let token_text = |id: Option<u32>| {
            id.map(|id| String::from_utf8_lossy(tokenizer.token_bytes(id)).into_owned()).unwrap_or_default()
        };
        Ok(ChatTemplate {
            environment,
            source: source.to_string(),
            origin,
            missing_reason: String::new(),
            bos_token: token_text(tokenizer.bos_id()),
            eos_token: token_text(tokenizer.eos_id()),
        })
    }

    pub fn origin(&self) -> TemplateOrigin {
        self.origin
    }

    /// The prompt text for `messages`; with `add_generation_prompt`, it ends by opening the
    /// assistant's turn.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let request = self.render_request(messages, add_generation_prompt)?;
        match template_sandbox::installed() {
            Some(sandbox) if self.origin == TemplateOrigin::Model => sandbox.render_request(&request),
            _ => render_with_limits(&self.environment, &request),
        }
    }

    /// What rendering `messages` takes, in the form the sandbox's child receives it.
    pub(super) fn render_request<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<RenderRequest<'a>, TemplateError> {
        if self.origin == TemplateOrigin::Missing {
            return Err(TemplateError::NoTemplate { reason: self.missing_reason.clone() });
        }
        Ok(RenderRequest {
            source: Cow::Borrowed(&self.source),
            messages: Cow::Borrowed(messages),
            add_generation_prompt,
            bos_token: Cow::Borrowed(&self.bos_token),
            eos_token: Cow::Borrowed(&self.eos_token),
        })
    }
}

/// One render: a template's source, the conversation and the special tokens' text. Borrowed
/// where it is made, owned where the sandbox's child reads it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RenderRequest<'a> {
    pub(super) source: Cow<'a, str>,
    messages: Cow<'a, [ChatMessage]>,
    add_generation_prompt: bool,
    bos_token: Cow<'a, str>,
    eos_token: Cow<'a, str>,
}

/// `source` compiled with the settings Hugging Face renders chat templates with in Jinja2; the
/// one place that configures minijinja, for this process and the sandbox's child alike.
pub(super) fn compile_environment(source: &str) -> Result<Environment<'static>, minijinja::Error> {
    let mut environment = Environment::new();
    environment.set_trim_blocks(true);
    environment.set_lstrip_blocks(true);
    minijinja_contrib::add_to_environment(&mut environment);
    environment.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    environment.add_function("raise_exception", raise_exception);
    environment.add_template_owned(TEMPLATE_NAME, source.to_string())?;
    Ok(environment)
}

/// Renders `request` with `environment` (its source compiled) under fuel and an output cap that
/// grow with the conversation.
pub(super) fn render_with_limits(
    environment: &Environment<'static>,
    request: &RenderRequest,
) -> Result<String, TemplateError> {
    let messages = &request.messages;
    let input_bytes: usize = messages.iter().map(|m| m.content.len() + m.role.as_str().len()).sum();
    let fuel =
        TEMPLATE_FUEL_BASE.saturating_add((messages.len() as u64).saturating_mul(TEMPLATE_FUEL_PER_MESSAGE));
    let limit =
        TEMPLATE_OUTPUT_BASE.saturating_add(input_bytes.saturating_mul(TEMPLATE_OUTPUT_PER_INPUT_BYTE));
    // Fuel is the environment's; a clone shares the compiled template.
    let mut environment = environment.clone();
    environment.set_fuel(Some(fuel));
    let template =
        environment.get_template(TEMPLATE_NAME).map_err(|e| TemplateError::Render(e.to_string()))?;
    let mut output = CappedOutput::new(limit);
    let rendered = template.render_captured_to(
        context! {
            messages => messages,
            add_generation_prompt => request.add_generation_prompt,
            bos_token => &request.bos_token,
            eos_token => &request.eos_token,
        },
        &mut output,
    );
    match rendered {
        Ok(_) => String::from_utf8(output.into_bytes()).map_err(|_| TemplateError::InvalidOutput),
        Err(error) if error.kind() == ErrorKind::OutOfFuel => Err(TemplateError::OutOfFuel { fuel }),
        Err(_) if output.overflowed() => Err(TemplateError::OutputTooLarge { limit, input_bytes }),
        Err(error) => Err(TemplateError::Render(error.to_string())),
    }
}

impl TemplateError {
    /// Whether the template asked for more than a render may take (as opposed to failing by
    /// its own logic).
    pub fn is_resource_limit(&self) -> bool {
        matches!(
            self,
            TemplateError::TooLarge { .. }
                | TemplateError::OutOfFuel { .. }
                | TemplateError::OutputTooLarge { .. }
                | TemplateError::MemoryLimit { .. }
                | TemplateError::TimedOut { .. }
        )
    }
}

fn raise_exception(message: String) -> Result<String, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

/// The prompt ids for `messages`, ending with the opened assistant turn. BOS is added by the
/// model's rule unless the template already wrote it (Gemma's and Llama 3's templates start with
/// it), so the prompt never starts with two.
pub fn encode_chat(
    tokenizer: &Tokenizer,
    template: &ChatTemplate,
    messages: &[ChatMessage],
) -> Result<Vec<u32>, TemplateError> {
    let text = template.render(messages, true)?;
    let template_wrote_bos = !template.bos_token.is_empty() && text.starts_with(&template.bos_token);
    Ok(tokenizer.encode(&text, tokenizer.add_bos() && !template_wrote_bos)?)
}
