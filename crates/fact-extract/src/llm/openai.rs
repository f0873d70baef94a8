//! [`OpenAiCompatibleLlm`] (feature `openai`): an [`LlmClient`] for OpenAI-compatible
//! chat-completions endpoints, over blocking HTTP.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

use super::client::{ERROR_TAIL_CHARS, LlmClient, LlmError, clip_tail};

/// Where and how [`OpenAiCompatibleLlm`] asks.
///
/// ```
/// use fact_extract::OpenAiConfig;
///
/// let config = OpenAiConfig::default()
///     .with_base_url("http://localhost:11434/v1") // Ollama's compatible endpoint
///     .with_model("llama3.2");
/// assert_eq!(config.model, "llama3.2");
/// assert_eq!(config.api_key_env, "OPENAI_API_KEY");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including the version: requests go to
    /// `{base_url}/chat/completions`. Default `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model name sent with each request. Default `gpt-4o-mini`.
    pub model: String,
    /// The *name* of the environment variable that holds the API key (never the key
    /// itself), read when the client is built. Default `OPENAI_API_KEY`.
    pub api_key_env: String,
    /// The longest a whole call may take, connecting and reading the reply included.
    /// Default 120 seconds.
    pub timeout: Duration,
    /// The sampling temperature; `None` leaves it out of the request (some models accept
    /// no other than their default). Default `Some(0.0)`, for repeatable extractions.
    pub temperature: Option<f64>,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: "https://api.openai.com/v1".to_owned(),
            model: "gpt-4o-mini".to_owned(),
            api_key_env: "OPENAI_API_KEY".to_owned(),
            timeout: Duration::from_secs(120),
            temperature: Some(0.0),
        }
    }
}

impl OpenAiConfig {
    /// Sends requests to `{base_url}/chat/completions`.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Asks the model named `model`.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Reads the API key from the environment variable named `api_key_env`.
    #[must_use]
    pub fn with_api_key_env(mut self, api_key_env: impl Into<String>) -> Self {
        self.api_key_env = api_key_env.into();
        self
    }

    /// Lets a whole call take at most `timeout`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Samples at `temperature`; `None` leaves the temperature out of the request.
    #[must_use]
    pub fn with_temperature(mut self, temperature: Option<f64>) -> Self {
        self.temperature = temperature;
        self
    }
}

/// An [`LlmClient`] that POSTs each prompt as one user message to an OpenAI-compatible
/// `/chat/completions` endpoint (OpenAI, Azure-style proxies, Ollama, vLLM, llama.cpp's
/// server...) and returns `choices[0].message.content`.
///
/// The request is `{"model": ..., "messages": [{"role": "user", "content": PROMPT}],
/// "temperature": ...}` with `Authorization: Bearer KEY`. An error status (429, 500...)
/// returns [`LlmError::Http`] with the status and the end of the body; no complete answer
/// within [`OpenAiConfig::timeout`] returns [`LlmError::Timeout`]; a body without that
/// content returns [`LlmError::InvalidReply`]; anything that stops the request earlier
/// returns [`LlmError::Transport`]. The `Debug` output never shows the key.
///
/// ```
/// use fact_extract::{LlmError, OpenAiCompatibleLlm, OpenAiConfig};
///
/// let config = OpenAiConfig::default().with_api_key_env("FACTMEM_DOC_EXAMPLE_UNSET_KEY");
/// let err = OpenAiCompatibleLlm::from_env(config.clone()).unwrap_err();
/// assert!(matches!(err, LlmError::MissingApiKey { ref var } if var == "FACTMEM_DOC_EXAMPLE_UNSET_KEY"));
///
/// let client = OpenAiCompatibleLlm::with_api_key(config, "sk-secret");
/// assert!(!format!("{client:?}").contains("sk-secret"));
/// ```
pub struct OpenAiCompatibleLlm {
    config: OpenAiConfig,
    api_key: String,
    agent: ureq::Agent,
}

impl fmt::Debug for OpenAiCompatibleLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiCompatibleLlm")
            .field("config", &self.config)
            .field("api_key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatibleLlm {
    /// A client whose key is read now from the environment variable
    /// [`config.api_key_env`](OpenAiConfig::api_key_env) names.
    ///
    /// # Errors
    ///
    /// [`LlmError::MissingApiKey`] when that variable is unset, blank or not Unicode.
    pub fn from_env(config: OpenAiConfig) -> Result<Self, LlmError> {
        match std::env::var(&config.api_key_env) {
            Ok(key) if !key.trim().is_empty() => Ok(Self::with_api_key(config, key.trim())),
            _ => Err(LlmError::MissingApiKey {
                var: config.api_key_env,
            }),
        }
    }

    /// A client with the key given directly (from a secret store, say);
    /// [`api_key_env`](OpenAiConfig::api_key_env) is not read.
    #[must_use]
    pub fn with_api_key(config: OpenAiConfig, api_key: impl Into<String>) -> Self {
        let agent = ureq::Agent::config_builder()
            // Error statuses come back as responses, so their bodies can be reported.
            .http_status_as_error(false)
            .timeout_global(Some(config.timeout))
            .build()
            .new_agent();
        OpenAiCompatibleLlm {
            config,
            api_key: api_key.into(),
            agent,
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// `{base_url}/chat/completions`, with no doubled slash.
    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    fn error(&self, error: ureq::Error) -> LlmError {
        match error {
            ureq::Error::Timeout(_) => LlmError::Timeout {
                after: self.config.timeout,
            },
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => LlmError::Timeout {
                after: self.config.timeout,
            },
            ureq::Error::StatusCode(status) => LlmError::Http {
                status,
                body_tail: String::new(),
            },
            other => LlmError::Transport(other.to_string()),
        }
    }
}

impl LlmClient for OpenAiCompatibleLlm {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        let mut body = json!({
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
        });
        if let (Some(temperature), Some(object)) = (self.config.temperature, body.as_object_mut()) {
            object.insert("temperature".to_owned(), json!(temperature));
        }
        let mut response = self
            .agent
            .post(self.url())
            .header("Authorization", format!("Bearer {}", self.api_key))
            .send_json(&body)
            .map_err(|error| self.error(error))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|error| self.error(error))?;
        if !response.status().is_success() {
            tracing::warn!(status, url = %self.url(), "LLM endpoint answered with an error");
            return Err(LlmError::Http {
                status,
                body_tail: clip_tail(&text, ERROR_TAIL_CHARS),
            });
        }
        let reply: Value = serde_json::from_str(&text).map_err(|error| {
            LlmError::InvalidReply(format!("the response is not JSON: {error}"))
        })?;
        match reply.pointer("/choices/0/message/content") {
            Some(Value::String(content)) => Ok(content.clone()),
            _ => Err(LlmError::InvalidReply(format!(
                "the response has no choices[0].message.content: {}",
                clip_tail(&text, ERROR_TAIL_CHARS)
            ))),
        }
    }
}
