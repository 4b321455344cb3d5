use minijinja::{context, Environment, ErrorKind};

use crate::gguf::{GgufError, GgufFile};

use super::builtin_templates::BuiltinTemplate;
use super::capped_output::CappedOutput;
use super::limits::{
    MAX_TEMPLATE_BYTES, TEMPLATE_FUEL_BASE, TEMPLATE_FUEL_PER_MESSAGE, TEMPLATE_OUTPUT_BASE,
    TEMPLATE_OUTPUT_PER_INPUT_BYTE,
};
use super::{ChatMessage, Role, Tokenizer, TokenizerError};

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("reading the chat template metadata: {0}")]
    Metadata(#[from] GgufError),
    #[error("the chat template does not compile: {0}")]
    Syntax(#[source] minijinja::Error),
    #[error("rendering the chat template: {0}")]
    Render(#[source] minijinja::Error),
    #[error("the chat template is {bytes} bytes, over the limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("the chat template ran out of fuel: rendering took more than {fuel} instructions (does it loop over huge ranges?)")]
    OutOfFuel { fuel: u64 },
    #[error("the chat template wrote more than {limit} bytes for a conversation of {input_bytes} bytes")]
    OutputTooLarge { limit: usize, input_bytes: usize },
    #[error("the chat template wrote invalid UTF-8")]
    InvalidOutput,
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
#[derive(Debug)]
pub struct ChatTemplate {
    environment: Environment<'static>,
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
        let mut environment = Environment::new();
        // Hugging Face renders chat templates with these Jinja2 settings.
        environment.set_trim_blocks(true);
        environment.set_lstrip_blocks(true);
        minijinja_contrib::add_to_environment(&mut environment);
        environment.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        environment.add_function("raise_exception", raise_exception);
        environment.add_template_owned(TEMPLATE_NAME, source.to_string()).map_err(TemplateError::Syntax)?;
        let token_text = |id: Option<u32>| {
            id.map(|id| String::from_utf8_lossy(tokenizer.token_bytes(id)).into_owned()).unwrap_or_default()
        };
        Ok(ChatTemplate {
            environment,
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
        if self.origin == TemplateOrigin::Missing {
            return Err(TemplateError::NoTemplate { reason: self.missing_reason.clone() });
        }
        let input_bytes: usize = messages.iter().map(|m| m.content.len() + m.role.as_str().len()).sum();
        let fuel = TEMPLATE_FUEL_BASE
            .saturating_add((messages.len() as u64).saturating_mul(TEMPLATE_FUEL_PER_MESSAGE));
        let limit =
            TEMPLATE_OUTPUT_BASE.saturating_add(input_bytes.saturating_mul(TEMPLATE_OUTPUT_PER_INPUT_BYTE));
        // Fuel is the environment's; a clone shares the compiled template.
        let mut environment = self.environment.clone();
        environment.set_fuel(Some(fuel));
        let template = environment.get_template(TEMPLATE_NAME).map_err(TemplateError::Render)?;
        let mut output = CappedOutput::new(limit);
        let rendered = template.render_captured_to(
            context! {
                messages => messages,
                add_generation_prompt => add_generation_prompt,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            },
            &mut output,
        );
        match rendered {
            Ok(_) => String::from_utf8(output.into_bytes()).map_err(|_| TemplateError::InvalidOutput),
            Err(error) if error.kind() == ErrorKind::OutOfFuel => Err(TemplateError::OutOfFuel { fuel }),
            Err(_) if output.overflowed() => Err(TemplateError::OutputTooLarge { limit, input_bytes }),
            Err(error) => Err(TemplateError::Render(error)),
        }
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
