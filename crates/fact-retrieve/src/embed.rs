//! [`Embedder`]: texts in, unit-norm vectors out; and the text a fact is embedded as.
//!
//! The implementation that runs a real model is [`OnnxEmbedder`] (feature `onnx`): a
//! sentence-embedding model (all-MiniLM-L6-v2, int8) run locally by ONNX Runtime from
//! files on disk, never from the network.

#[cfg(feature = "onnx")]
mod onnx;

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use fact_model::SessionFact;

#[cfg(feature = "onnx")]
pub use self::onnx::{OnnxEmbedder, OnnxOptions};

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
}

impl EmbedError {
    /// A short, stable code: `missing`, `load` or `inference`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::Missing { .. } => "missing",
            EmbedError::Load { .. } => "load",
            EmbedError::Inference { .. } => "inference",
        }
    }
}

/// The text a fact is embedded as: its statement when it has one, otherwise
/// `subject relation object` with the relation's underscores read as spaces.
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// let fact = SessionFact::builder("user", "prefers_test_framework", "pytest")
///     .tag(Tag::Preference).source("chat-1", SourceRole::Extractor)
///     .valid_from(Timestamp::UNIX_EPOCH).build()?;
/// assert_eq!(fact_retrieve::embedding_text(&fact), "user prefers test framework pytest");
/// # Ok::<(), fact_model::FactError>(())
/// ```
#[must_use]
pub fn embedding_text(fact: &SessionFact) -> String {
    match fact.statement() {
        Some(statement) => statement.to_owned(),
        None => format!(
            "{} {} {}",
            fact.subject(),
            fact.relation().replace('_', " "),
            fact.object()
        ),
    }
}
