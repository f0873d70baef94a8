//! `OnnxEmbedder` with an ONNX Runtime path that is not a loadable library: a typed
//! [`EmbedError::Load`], never a panic. In its own test binary (process), since ONNX Runtime
//! is loaded once per process from the first path given.
//!
//! Needs no model: the tokenizer is a minimal one written here and `model.onnx` is never read
//! by ONNX Runtime, which fails first.

#![cfg(feature = "onnx")]
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use fact_retrieve::{EmbedError, OnnxEmbedder, OnnxOptions};

/// A word-level tokenizer with one token, enough for `Tokenizer::from_file`.
const TOKENIZER: &str = r#"{
  "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
  "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
  "model": { "type": "WordLevel", "vocab": { "[UNK]": 0 }, "unk_token": "[UNK]" }
}"#;

/// A directory with a tokenizer, a `model.onnx` and the given runtime file.
fn directory(name: &str, runtime: &[u8]) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("factmem-onnx-bad-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tokenizer.json"), TOKENIZER).unwrap();
    std::fs::write(dir.join("model.onnx"), "not a model").unwrap();
    let library = dir.join("libonnxruntime.so.1.32.0");
    std::fs::write(&library, runtime).unwrap();
    (dir, library)
}

fn assert_load(result: Result<OnnxEmbedder, EmbedError>, library: &PathBuf) {
    match result {
        Err(EmbedError::Load { path, message }) => {
            assert_eq!(&path, library, "{message}");
            assert!(!message.is_empty());
        }
        other => panic!("expected Load of {}, got {other:?}", library.display()),
    }
}

#[test]
fn text_file_runtime_is_a_load_error() {
    let (dir, library) = directory("text", b"this is a text file, not ONNX Runtime\n");
    let options = OnnxOptions::default().with_runtime(&library);
    assert_load(OnnxEmbedder::open_with(&dir, options), &library);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_runtime_is_a_load_error() {
    let (dir, library) = directory("empty", b"");
    let options = OnnxOptions::default().with_runtime(&library);
    assert_load(OnnxEmbedder::open_with(&dir, options), &library);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An ELF header and garbage: it passes the header check, so `ort` tries to load it and
/// panics; the panic becomes a `Load` error, again on every later attempt.
#[test]
fn corrupt_library_is_a_load_error_not_a_panic() {
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend(std::iter::repeat_n(0xA5_u8, 4096));
    let (dir, library) = directory("corrupt", &bytes);
    let options = OnnxOptions::default().with_runtime(&library);
    assert_load(OnnxEmbedder::open_with(&dir, options.clone()), &library);
    assert_load(OnnxEmbedder::open_with(&dir, options), &library);
    std::fs::remove_dir_all(&dir).unwrap();
}
