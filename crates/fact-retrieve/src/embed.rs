//! [`Embedder`]: texts in, unit-norm vectors out; and the text a fact is embedded as.
//!
//! The implementation that runs a real model is [`OnnxEmbedder`](crate::OnnxEmbedder)
//! (feature `onnx`, in `embed/onnx.rs`): a sentence-embedding model (all-MiniLM-L6-v2,
//! int8) run locally by ONNX Runtime from files on disk, never from the network.

#[cfg(feature = "onnx")]
pub(crate) mod onnx;

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use fact_model::SessionFact;

/// A sentence-embedding model: texts in, one unit-norm vector per text out.
///
/// Object safe (`Arc<dyn Embedder>`), shared between threads. Implementations never
/// panic: a model that cannot run returns an [`EmbedError`].
///
/// ```
/// use fact_retrieve::{EmbedError, Embedder};
///
/// /// Two dimensions: how much of the text is vowels, and the rest.
/// #[derive(Debug)]
/// struct Vowels;
///
/// impl Embedder for Vowels {
///     fn model(&self) -> &str { "vowels-v1" }
///     fn dimension(&self) -> usize { 2 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|text| {
///             let vowels = text.chars().filter(|c| "aeiou".contains(*c)).count() as f32;
///             let rest = text.chars().count() as f32 - vowels;
///             let norm = (vowels * vowels + rest * rest).sqrt().max(f32::MIN_POSITIVE);
///             vec![vowels / norm, rest / norm]
///         }).collect())
///     }
/// }
///
/// let vectors = Vowels.embed(&["aaa", "xyz"])?;
/// assert_eq!(vectors, [vec![1.0, 0.0], vec![0.0, 1.0]]);
/// # Ok::<(), EmbedError>(())
/// ```
pub trait Embedder: Send + Sync + Debug {
    /// The model's identity, stored with every embedding it makes, so that vectors of two
    /// models (or two versions of one) are never compared. At most
    /// [`MAX_MODEL_BYTES`](fact_store::MAX_MODEL_BYTES) bytes.
    fn model(&self) -> &str;

    /// The length of every vector it returns.
    fn dimension(&self) -> usize;

    /// One vector of [`dimension`](Self::dimension) values and unit length per text, in
    /// the order of `texts`. An empty slice gives an empty result.
    ///
    /// # Errors
    ///
    /// An [`EmbedError`] when the model fails on this input; nothing is returned then.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// One [`TokenEmbedding`] per text, in the order of `texts`: the text's vector (as
    /// [`embed`](Self::embed) gives it) and one unit vector per token, what late
    /// interaction ([`LateInteraction`](crate::LateInteraction)) compares.
    ///
    /// The default answers [`EmbedError::Unsupported`]: a model that pools inside gives
    /// no token vectors. [`OnnxEmbedder`](crate::OnnxEmbedder) gives its last hidden
    /// state, before pooling.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Unsupported`] for a model without token output,
    /// [`EmbedError::NoTokens`] for a text that leaves no token,
    /// [`EmbedError::TokenMismatch`] when the model's token output does not match its
    /// tokenizer, or the model's error.
    fn embed_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        let _ = texts;
        Err(EmbedError::Unsupported {
            model: self.model().to_owned(),
        })
    }

    /// [`embed_tokens`](Self::embed_tokens) for texts that are read together: each episode
    /// is a list of parts in order (the turns of one conversation), and each part's own
    /// tokens are read in the context of at least `context` parts on either side (where the
    /// episode has them), their mean its vector. The model runs over windows of
    /// consecutive parts; only each part's own tokens are kept, so a part costs no more to
    /// store than alone. One result list per episode, one result per part, in order;
    /// [`EmbedError::NoTokens`] counts parts across the episodes, in order.
    ///
    /// The default embeds each part alone (`context` is not used); with `context` 0,
    /// [`OnnxEmbedder`](crate::OnnxEmbedder) does the same.
    ///
    /// # Errors
    ///
    /// As [`embed_tokens`](Self::embed_tokens).
    fn embed_tokens_in_context(
        &self,
        episodes: &[&[&str]],
        context: usize,
    ) -> Result<Vec<Vec<TokenEmbedding>>, EmbedError> {
        let _ = context;
        split_episodes(episodes, self.embed_tokens(&episodes.concat())?)
    }
}

/// `items` (one per part of `episodes`, in order) as one list per episode.
pub(crate) fn split_episodes<T>(
    episodes: &[&[&str]],
    items: Vec<T>,
) -> Result<Vec<Vec<T>>, EmbedError> {
    let parts: usize = episodes.iter().map(|episode| episode.len()).sum();
    if items.len() != parts {
        return Err(EmbedError::Inference {
            message: format!(
                "the model returned {} results for {parts} parts",
                items.len()
            ),
        });
    }
    let mut items = items.into_iter();
    Ok(episodes
        .iter()
        .map(|episode| items.by_ref().take(episode.len()).collect())
        .collect())
}

/// A text's embedding and its token vectors, from one run of the model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TokenEmbedding {
    /// The text's vector, unit length ([`Embedder::embed`]'s).
    pub vector: Vec<f32>,
    /// One unit vector of [`Embedder::dimension`] values per token, row-major.
    pub tokens: Vec<f32>,
}

impl TokenEmbedding {
    /// A text's `vector` and its `tokens` (row-major, `dimension` values per token).
    #[must_use]
    pub fn new(vector: Vec<f32>, tokens: Vec<f32>) -> Self {
        TokenEmbedding { vector, tokens }
    }

    /// How many token vectors of `dimension` values it holds.
    #[must_use]
    pub fn token_count(&self, dimension: usize) -> usize {
        self.tokens.len().checked_div(dimension).unwrap_or(0)
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn model(&self) -> &str {
        (**self).model()
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn embed_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        (**self).embed_tokens(texts)
    }
    fn embed_tokens_in_context(
        &self,
        episodes: &[&[&str]],
        context: usize,
    ) -> Result<Vec<Vec<TokenEmbedding>>, EmbedError> {
        (**self).embed_tokens_in_context(episodes, context)
    }
}

impl<E: Embedder + ?Sized> Embedder for Arc<E> {
    fn model(&self) -> &str {
        (**self).model()
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn embed_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        (**self).embed_tokens(texts)
    }
    fn embed_tokens_in_context(
        &self,
        episodes: &[&[&str]],
        context: usize,
    ) -> Result<Vec<Vec<TokenEmbedding>>, EmbedError> {
        (**self).embed_tokens_in_context(episodes, context)
    }
}

/// The files of a local sentence-embedding model, wherever they are: what
/// [`OnnxEmbedder::open_files`](crate::OnnxEmbedder::open_files) (feature `onnx`) opens when
/// the files are not gathered in one model directory, as when a package manager installed
/// them (the Python package's `factmem[embed]` extra puts each in its own package).
///
/// A plain value: nothing is checked or read when it is made. The model's identity (stored
/// with every embedding, see [`Embedder::model`]) is made of [`name`](Self::name) and a hash
/// of the model and tokenizer files, so two sets of files with the same name and the same
/// bytes make vectors that are compared, wherever the files live.
///
/// ```
/// use fact_retrieve::ModelFiles;
/// let files = ModelFiles::new(
///     "all-minilm-l6-v2-int8",
///     "/opt/models/model.onnx",
///     "/opt/models/tokenizer.json",
///     Some("/opt/onnxruntime/libonnxruntime.so.1.32.0".into()),
/// );
/// assert_eq!(files.name, "all-minilm-l6-v2-int8");
/// assert!(files.runtime.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ModelFiles {
    /// The model's name, the first part of its identity (`all-minilm-l6-v2-int8`): not
    /// empty; only its first 200 bytes are used (cut at a character boundary).
    pub name: String,
    /// The model in ONNX (`model.onnx`).
    pub model: PathBuf,
    /// Its tokenizer (`tokenizer.json`, the format of Hugging Face's `tokenizers`).
    pub tokenizer: PathBuf,
    /// The ONNX Runtime shared library (`libonnxruntime.so.*`, `libonnxruntime*.dylib` or
    /// `onnxruntime.dll`). [`OnnxOptions::runtime`](crate::OnnxOptions::runtime) and
    /// `ORT_DYLIB_PATH` win over it; `None`: the runtime library beside the model file.
    pub runtime: Option<PathBuf>,
}

impl ModelFiles {
    /// The model `name`, its `model` and `tokenizer` files and, if known, its ONNX
    /// `runtime` library.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        model: impl Into<PathBuf>,
        tokenizer: impl Into<PathBuf>,
        runtime: Option<PathBuf>,
    ) -> Self {
        ModelFiles {
            name: name.into(),
            model: model.into(),
            tokenizer: tokenizer.into(),
            runtime,
        }
    }
}

/// Why an [`Embedder`] cannot be made or cannot embed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the model needs is not there.
    #[error("{what} not found at {path}; {hint}", path = path.display())]
    Missing {
        /// What is missing (`the ONNX model`, `the tokenizer`, `ONNX Runtime`).
        what: String,
        /// Where it was looked for.
        path: PathBuf,
        /// How to get it.
        hint: String,
    },
    /// The model's files are there but cannot be loaded.
    #[error("cannot load {path}: {message}", path = path.display())]
    Load {
        /// The file that failed.
        path: PathBuf,
        /// Why, in the runtime's words.
        message: String,
    },
    /// The model failed on this input.
    #[error("embedding failed: {message}")]
    Inference {
        /// Why, in the runtime's words.
        message: String,
    },
    /// The model gives no token vectors ([`Embedder::embed_tokens`]).
    #[error("the model {model} gives no token vectors")]
    Unsupported {
        /// The model's identity.
        model: String,
    },
    /// A text leaves no token to embed (nothing but what the tokenizer drops).
    #[error("text {index} of the batch has no tokens")]
    NoTokens {
        /// The text's place in the call's `texts`.
        index: usize,
    },
    /// The model's token output does not match its tokenizer: another number of tokens
    /// than the tokenizer made, or vectors of another size.
    #[error("the model's token output does not match its tokenizer: {message}")]
    TokenMismatch {
        /// What differs.
        message: String,
    },
}

impl EmbedError {
    /// A short, stable code: `missing`, `load`, `inference`, `unsupported`, `no_tokens`
    /// or `token_mismatch`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::Missing { .. } => "missing",
            EmbedError::Load { .. } => "load",
            EmbedError::Inference { .. } => "inference",
            EmbedError::Unsupported { .. } => "unsupported",
            EmbedError::NoTokens { .. } => "no_tokens",
            EmbedError::TokenMismatch { .. } => "token_mismatch",
        }
    }
}

/// The text a fact is embedded as: its statement when it has one and names the fact's
/// subject; a statement that does not (a turn of a conversation, kept whole) after the
/// subject and the relation; otherwise `subject relation object`. Relations' underscores
/// read as spaces. The subject is always in the text: questions name who said or did what.
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// let fact = |relation: &str, object: &str, statement: Option<&str>| {
///     let mut builder = SessionFact::builder("Melanie", relation, object)
///         .tag(Tag::Preference).source("chat-1", SourceRole::Extractor)
///         .valid_from(Timestamp::UNIX_EPOCH);
///     if let Some(statement) = statement {
///         builder = builder.statement(statement);
///     }
///     builder.build()
/// };
/// let plain = fact("prefers_test_framework", "pytest", None)?;
/// assert_eq!(fact_retrieve::embedding_text(&plain), "Melanie prefers test framework pytest");
/// let named = fact("adopted", "a puppy", Some("Melanie adopted a puppy named Oscar"))?;
/// assert_eq!(fact_retrieve::embedding_text(&named), "Melanie adopted a puppy named Oscar");
/// let turn = fact("said", "I adopted a puppy", Some("I adopted a puppy named Oscar!"))?;
/// assert_eq!(fact_retrieve::embedding_text(&turn), "Melanie said I adopted a puppy named Oscar!");
/// # Ok::<(), fact_model::FactError>(())
/// ```
#[must_use]
pub fn embedding_text(fact: &SessionFact) -> String {
    let relation = fact.relation().replace('_', " ");
    match fact.statement() {
        Some(statement) if names(statement, fact.subject()) => statement.to_owned(),
        Some(statement) => format!("{} {relation} {statement}", fact.subject()),
        None => format!("{} {relation} {}", fact.subject(), fact.object()),
    }
}

/// Whether `text` holds `subject`, ignoring case.
fn names(text: &str, subject: &str) -> bool {
    text.to_lowercase().contains(&subject.to_lowercase())
}
