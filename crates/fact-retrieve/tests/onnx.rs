//! `OnnxEmbedder` on the real model (all-MiniLM-L6-v2, int8) from `FACTMEM_MODEL_DIR`, and its
//! errors for missing files (which need no model).
//!
//! `eval "$(.ci/models)"` assembles the model directory and sets `FACTMEM_MODEL_DIR`. Without
//! it the model tests print a skip message and pass, except under `CI=true`, where they fail.
//! A runtime that is not a library is tested in `onnx_bad_runtime.rs`: ONNX Runtime is loaded
//! once per process, so a bad one would poison this binary's other tests.

#![cfg(feature = "onnx")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use fact_retrieve::{EmbedError, Embedder, ModelFiles, OnnxEmbedder, OnnxOptions};

/// The model directory, or `None` (after a skip message) when `FACTMEM_MODEL_DIR` is unset;
/// under `CI=true` a missing model fails the test.
fn model_dir() -> Option<PathBuf> {
    match std::env::var_os("FACTMEM_MODEL_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            let message = "FACTMEM_MODEL_DIR is not set: run `eval \"$(.ci/models)\"` to \
                           assemble the ONNX model directory";
            if std::env::var("CI").is_ok_and(|ci| ci == "true") {
                panic!("{message} (required under CI=true)");
            }
            eprintln!("skipped: {message}");
            None
        }
    }
}

/// One embedder with the default options, shared by the tests of this binary.
fn embedder() -> Option<&'static OnnxEmbedder> {
    static EMBEDDER: OnceLock<OnnxEmbedder> = OnceLock::new();
    let dir = model_dir()?;
    Some(EMBEDDER.get_or_init(|| OnnxEmbedder::open(&dir).unwrap()))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// A fresh, empty directory under the system's temporary directory.
fn scratch_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "factmem-onnx-{}-{name}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_missing(result: Result<OnnxEmbedder, EmbedError>, what: &str, path: &Path) {
    match result {
        Err(error @ EmbedError::Missing { .. }) => {
            let message = error.to_string();
            assert!(message.contains(".ci/models"), "{message}");
            assert!(message.contains(what), "{message}");
            let EmbedError::Missing { path: at, .. } = &error else {
                unreachable!()
            };
            assert_eq!(at, path, "{message}");
            assert_eq!(error.code(), "missing");
        }
        other => panic!("expected Missing {what}, got {other:?}"),
    }
}

#[test]
fn embedder_is_shared_between_threads() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<OnnxEmbedder>();
    shared::<std::sync::Arc<dyn Embedder>>();
}

#[test]
fn options_have_floors_and_defaults() {
    let options = OnnxOptions::default();
    assert!((1..=4).contains(&options.threads));
    assert_eq!((options.max_tokens, options.batch_size), (256, 16));
    assert_eq!(options.runtime, None);
    let options = options
        .with_threads(0)
        .with_batch_size(0)
        .with_max_tokens(0)
        .with_runtime("/opt/ort/libonnxruntime.so");
    assert_eq!((options.threads, options.batch_size), (1, 1));
    assert_eq!(options.max_tokens, 8);
    assert_eq!(
        options.runtime.as_deref(),
        Some(Path::new("/opt/ort/libonnxruntime.so"))
    );
}

#[test]
fn missing_directory_is_missing() {
    let dir = scratch_dir("gone").join("nowhere");
    assert_missing(OnnxEmbedder::open(&dir), "the model directory", &dir);
}

#[test]
fn missing_model_is_missing() {
    let dir = scratch_dir("no-model");
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    assert_missing(
        OnnxEmbedder::open(&dir),
        "the ONNX model",
        &dir.join("model.onnx"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_tokenizer_is_missing() {
    let dir = scratch_dir("no-tokenizer");
    std::fs::write(dir.join("model.onnx"), "not a model").unwrap();
    assert_missing(
        OnnxEmbedder::open(&dir),
        "the tokenizer",
        &dir.join("tokenizer.json"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_runtime_is_missing() {
    let dir = scratch_dir("no-runtime");
    std::fs::write(dir.join("model.onnx"), "not a model").unwrap();
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    // A file of the runtime's name prefix that is another library is not taken for it.
    std::fs::write(dir.join("libonnxruntime_providers_shared.so"), "").unwrap();

    let named = dir.join("lib").join("libonnxruntime.so.1.32.0");
    let options = OnnxOptions::default().with_runtime(&named);
    assert_missing(
        OnnxEmbedder::open_with(&dir, options),
        "ONNX Runtime",
        &named,
    );

    // Without an explicit runtime, the directory is searched (unless ORT_DYLIB_PATH names
    // one, which then must exist instead).
    match std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        None => {
            let result = OnnxEmbedder::open(&dir);
            let Err(EmbedError::Missing { what, path, hint }) = result else {
                panic!("expected Missing ONNX Runtime, got {result:?}");
            };
            assert_eq!(what, "ONNX Runtime");
            assert!(path.starts_with(&dir), "{}", path.display());
            assert!(hint.contains(".ci/models"), "{hint}");
        }
        Some(path) if !Path::new(&path).is_file() => {
            assert_missing(OnnxEmbedder::open(&dir), "ONNX Runtime", Path::new(&path));
        }
        Some(_) => {}
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn model_files_that_are_missing_are_missing_by_name() {
    let dir = scratch_dir("files");
    let model = dir.join("a").join("model.onnx");
    let tokenizer = dir.join("b").join("tokenizer.json");
    let runtime = dir.join("c").join("libonnxruntime.so.1.32.0");
    let files = ModelFiles::new("m", &model, &tokenizer, Some(runtime.clone()));
    let open = || OnnxEmbedder::open_files(&files, OnnxOptions::default());
    assert_missing(open(), "the ONNX model", &model);
    std::fs::create_dir_all(model.parent().unwrap()).unwrap();
    std::fs::write(&model, "not a model").unwrap();
    assert_missing(open(), "the tokenizer", &tokenizer);
    std::fs::create_dir_all(tokenizer.parent().unwrap()).unwrap();
    std::fs::write(&tokenizer, "{}").unwrap();
    match std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        None => assert_missing(open(), "ONNX Runtime", &runtime),
        Some(path) if !Path::new(&path).is_file() => {
            assert_missing(open(), "ONNX Runtime", Path::new(&path));
        }
        Some(_) => {}
    }
    // Without a runtime named, the one beside the model file is looked for.
    let unnamed = ModelFiles::new("m", &model, &tokenizer, None);
    if std::env::var_os("ORT_DYLIB_PATH").is_none_or(|p| p.is_empty()) {
        let result = OnnxEmbedder::open_files(&unnamed, OnnxOptions::default());
        let Err(EmbedError::Missing { what, path, .. }) = result else {
            panic!("expected Missing ONNX Runtime, got {result:?}");
        };
        assert_eq!(what, "ONNX Runtime");
        assert_eq!(path.parent(), model.parent());
    }
    // A model needs a name.
    let nameless = ModelFiles::new(" ", &model, &tokenizer, Some(runtime));
    let result = OnnxEmbedder::open_files(&nameless, OnnxOptions::default());
    let Err(error @ EmbedError::Load { .. }) = result else {
        panic!("expected Load, got {result:?}");
    };
    assert!(error.to_string().contains("name is empty"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn model_files_under_the_directorys_name_have_its_identity() {
    let Some(embedder) = embedder() else { return };
    let dir = model_dir().unwrap();
    let name = std::fs::canonicalize(&dir)
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let runtime = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("libonnxruntime") || name == "onnxruntime.dll"
        });
    let files = ModelFiles::new(
        name.clone(),
        dir.join("model.onnx"),
        dir.join("tokenizer.json"),
        runtime.clone(),
    );
    let opened = OnnxEmbedder::open_files(&files, OnnxOptions::default()).unwrap();
    assert_eq!(opened.model(), embedder.model());
    assert!(
        opened.model().starts_with(&format!("onnx:{name}:")),
        "{}",
        opened.model()
    );
    let text = ["which pet does she own?"];
    assert_eq!(opened.embed(&text).unwrap(), embedder.embed(&text).unwrap());

    // Another name, another identity; a long one is cut at a character boundary.
    let long = "é".repeat(150);
    let renamed = ModelFiles::new(long, &files.model, &files.tokenizer, runtime);
    let renamed = OnnxEmbedder::open_files(&renamed, OnnxOptions::default()).unwrap();
    let identity = renamed.model();
    assert_eq!(
        identity,
        format!(
            "onnx:{}:{}",
            "é".repeat(100),
            embedder.model().rsplit(':').next().unwrap()
        )
    );
    assert!(identity.len() <= fact_store::MAX_MODEL_BYTES, "{identity}");
}

#[test]
fn dimension_is_384_and_vectors_are_unit() {
    let Some(embedder) = embedder() else { return };
    assert_eq!(embedder.dimension(), 384);
    let vectors = embedder
        .embed(&["What did Caroline research?", "Melanie painted a sunrise."])
        .unwrap();
    assert_eq!(vectors.len(), 2);
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        assert!((norm(vector) - 1.0).abs() < 1e-4, "{}", norm(vector));
        assert!(vector.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn model_identity_is_stable_and_short() {
    let Some(embedder) = embedder() else { return };
    let dir = model_dir().unwrap();
    let model = embedder.model();
    assert!(model.starts_with("onnx:"), "{model}");
    assert!(model.len() <= fact_store::MAX_MODEL_BYTES, "{model}");
    let digits = model.rsplit(':').next().unwrap();
    assert_eq!(digits.len(), 16, "{model}");
    assert!(digits.chars().all(|c| c.is_ascii_hexdigit()), "{model}");
    let again = OnnxEmbedder::open_with(&dir, OnnxOptions::default().with_threads(1)).unwrap();
    assert_eq!(again.model(), model);
}

#[test]
fn batch_equals_single() {
    let Some(embedder) = embedder() else { return };
    let texts = [
        "Caroline went to an LGBTQ support group yesterday.",
        "short",
        "Melanie is planning a camping trip with her kids next month, near the lake.",
        "What is Caroline's identity?",
    ];
    let batch = embedder.embed(&texts).unwrap();
    for (text, batched) in texts.iter().zip(&batch) {
        let single = embedder.embed(&[text]).unwrap();
        let similarity = cosine(&single[0], batched);
        assert!(similarity >= 0.999, "{text}: {similarity}");
    }
}

#[test]
fn paraphrase_is_closer_than_unrelated() {
    let Some(embedder) = embedder() else { return };
    let vectors = embedder
        .embed(&[
            "Caroline went to an LGBTQ support group",
            "Caroline attended a meeting of a support group for LGBTQ people",
            "The quarterly tax report is due on Friday",
        ])
        .unwrap();
    let paraphrase = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    assert!(
        paraphrase > unrelated + 0.2,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );
}

#[test]
fn deterministic_across_calls() {
    let Some(embedder) = embedder() else { return };
    let texts = ["When did Melanie paint a sunrise?", "adoption agencies"];
    let first = embedder.embed(&texts).unwrap();
    let second = embedder.embed(&texts).unwrap();
    assert_eq!(first, second);
}

#[test]
fn hostile_inputs_never_panic() {
    let Some(embedder) = embedder() else { return };
    assert_eq!(embedder.embed(&[]).unwrap(), Vec::<Vec<f32>>::new());

    let megabyte = "the quick brown fox jumps over the lazy dog ".repeat(24_000);
    assert!(megabyte.len() > 1_000_000);
    let combining = format!("e{}", "\u{301}".repeat(10_000));
    let mixed_combining = "a\u{300}\u{316}\u{35c}".repeat(2_500);
    let texts = [
        "",
        "\0",
        "before\0after",
        &"\0".repeat(1000),
        &megabyte,
        &combining,
        &mixed_combining,
        "\u{feff}\u{200b}\u{202e}",
        "🦀🦀🦀 emoji only 👩‍👩‍👧",
        "   \t\n  ",
    ];
    for text in texts {
        match embedder.embed(&[text]) {
            Ok(vectors) => {
                assert_eq!(vectors.len(), 1);
                assert_eq!(vectors[0].len(), 384);
                assert!((norm(&vectors[0]) - 1.0).abs() < 1e-4);
            }
            Err(error) => assert_eq!(error.code(), "inference", "{error}"),
        }
    }
    // All of them in one batch, too.
    match embedder.embed(&texts) {
        Ok(vectors) => {
            assert_eq!(vectors.len(), texts.len());
            assert!(vectors.iter().all(|v| v.len() == 384));
        }
        Err(error) => assert_eq!(error.code(), "inference", "{error}"),
    }
}

#[test]
fn long_inputs_are_truncated_to_max_tokens() {
    let Some(embedder) = embedder() else { return };
    // Past the truncation point, more text changes nothing.
    let long = "Caroline talked about her adoption plans at length. ".repeat(200);
    let longer = format!("{long} And then something entirely different about cars.");
    let vectors = embedder.embed(&[&long, &longer]).unwrap();
    assert!(cosine(&vectors[0], &vectors[1]) >= 0.9999);
}

#[test]
fn more_than_batch_size_in_order() {
    let Some(dir) = model_dir() else { return };
    let small = OnnxEmbedder::open_with(&dir, OnnxOptions::default().with_batch_size(4)).unwrap();
    let texts: Vec<String> = (0..11)
        .map(|i| format!("Fact number {i}: the meeting moved to room {}", i * 7))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = small.embed(&refs).unwrap();
    assert_eq!(batched.len(), 11);
    let reference = embedder().unwrap();
    for (i, (text, vector)) in refs.iter().zip(&batched).enumerate() {
        let single = reference.embed(&[text]).unwrap();
        let similarity = cosine(&single[0], vector);
        assert!(similarity >= 0.999, "text {i}: {similarity}");
    }
    // And with the default batch size of 32, past one batch.
    let many: Vec<String> = (0..70).map(|i| format!("sentence {i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let vectors = reference.embed(&refs).unwrap();
    assert_eq!(vectors.len(), 70);
    let last = reference.embed(&[refs[69]]).unwrap();
    assert!(cosine(&last[0], &vectors[69]) >= 0.999);
}

#[test]
fn concurrent_calls_agree() {
    let Some(embedder) = embedder() else { return };
    let expected = embedder.embed(&["a shared question"]).unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| embedder.embed(&["a shared question"]).unwrap()))
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), expected);
        }
    });
}

#[test]
fn token_vectors_are_the_texts_own_tokens_unit_and_pooled_as_embed_pools() {
    let Some(embedder) = embedder() else { return };
    let texts = ["Caroline researched adoption agencies", "a beagle"];
    let embedded = embedder.embed_tokens(&texts).unwrap();
    let pooled = embedder.embed(&texts).unwrap();
    assert_eq!(embedded.len(), 2);
    for (item, vector) in embedded.iter().zip(&pooled) {
        // The same vector as `embed` (one run, mean over the mask).
        assert!(cosine(&item.vector, vector) > 0.9999);
        assert_eq!(item.tokens.len() % 384, 0);
        for token in item.tokens.chunks(384) {
            assert!((norm(token) - 1.0).abs() < 1e-4);
        }
    }
    // `a beagle`: three word pieces at most, no [CLS] or [SEP].
    let count = embedded[1].token_count(384);
    assert!((2..=3).contains(&count), "{count} tokens");
    // A text that leaves no token is a typed error naming its place in the call.
    match embedder.embed_tokens(&["fine", ""]) {
        Err(EmbedError::NoTokens { index }) => assert_eq!(index, 1),
        other => panic!("expected NoTokens, got {other:?}"),
    }
    for text in ["\u{feff}\u{200b}", "   \t\n  "] {
        match embedder.embed_tokens(&[text]) {
            Ok(items) => assert!(items[0].token_count(384) > 0),
            Err(error) => assert_eq!(error.code(), "no_tokens", "{error}"),
        }
    }
}

#[test]
fn a_part_read_in_context_keeps_its_own_tokens_and_hears_its_neighbours() {
    let Some(embedder) = embedder() else { return };
    let turns = [
        "Did you finally adopt the puppy?",
        "Yes, his name is Oscar.",
        "That is wonderful news!",
    ];
    let alone = embedder.embed_tokens(&turns).unwrap();
    let read = embedder.embed_tokens_in_context(&[&turns], 1).unwrap();
    assert_eq!(read.len(), 1);
    let read = &read[0];
    assert_eq!(read.len(), 3);
    for (a, r) in alone.iter().zip(read) {
        // The same tokens, so the same storage, whatever the context.
        assert_eq!(a.token_count(384), r.token_count(384));
        assert!((norm(&r.vector) - 1.0).abs() < 1e-4);
    }
    // The context changes the middle turn's vectors: it now hears about the puppy.
    assert!(cosine(&alone[1].vector, &read[1].vector) < 0.999);
    let puppy = embedder.embed(&["adopting a puppy"]).unwrap();
    assert!(cosine(&read[1].vector, &puppy[0]) > cosine(&alone[1].vector, &puppy[0]));
    // Context 0 is reading alone.
    let zero = embedder.embed_tokens_in_context(&[&turns], 0).unwrap();
    assert_eq!(zero, std::slice::from_ref(&alone));
    // Several episodes in one call: each read on its own, results in order.
    let two = embedder
        .embed_tokens_in_context(&[&turns[..2], &turns[2..]], 1)
        .unwrap();
    assert_eq!((two.len(), two[0].len(), two[1].len()), (2, 2, 1));
    // Episodes do not hear each other: the last turn, alone in its episode, reads as it
    // does in a call of its own.
    let own = embedder.embed_tokens_in_context(&[&turns[2..]], 1).unwrap();
    assert!(cosine(&two[1][0].vector, &own[0][0].vector) > 0.9999);
    assert!(cosine(&two[1][0].vector, &read[2].vector) < 0.999);
    // A part with no tokens, in context too: counted across the episodes.
    match embedder.embed_tokens_in_context(&[&["hi"], &["hello", "", "bye"]], 2) {
        Err(EmbedError::NoTokens { index }) => assert_eq!(index, 2),
        other => panic!("expected NoTokens, got {other:?}"),
    }
    // Long neighbours are cut to fit the window: no error, own tokens kept whole.
    let long = "and then we talked about it ".repeat(200);
    let parts = [long.as_str(), "Oscar loves the beach.", long.as_str()];
    let read = embedder.embed_tokens_in_context(&[&parts], 2).unwrap();
    assert_eq!(read[0][1].token_count(384), alone_count(embedder, parts[1]));
    // Many short turns share windows; each still keeps exactly its own tokens.
    let many: Vec<String> = (0..40)
        .map(|i| format!("turn number {i} about dogs"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let read = embedder.embed_tokens_in_context(&[&many], 1).unwrap();
    let alone_many = embedder.embed_tokens(&many).unwrap();
    for (r, a) in read[0].iter().zip(&alone_many) {
        assert_eq!(r.token_count(384), a.token_count(384));
    }
}

fn alone_count(embedder: &OnnxEmbedder, text: &str) -> usize {
    embedder.embed_tokens(&[text]).unwrap()[0].token_count(384)
}
