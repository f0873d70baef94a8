//! `cargo xtask dist`: the release artifacts of this platform, into `target/dist/`.
//!
//! One run builds, for the host (the `rustc -vV` triple):
//!
//! - `facts-VERSION-TARGET.tar.gz`: the release binary (`cargo build --release --locked -p
//!   factmem-cli`, also left at `target/release/facts`; see [`build_binary`]), the two
//!   licences, the README, the shell completions (`facts completions SHELL`) and the man pages
//!   (`facts man`), under one top folder `facts-VERSION-TARGET/`;
//! - the Python wheel `factmem-VERSION-*.whl` (`maturin build --release --locked`; maturin from
//!   `$MATURIN` or the `PATH`, pinned at [`MATURIN_VERSION`] as `.ci/py` pins it);
//! - the npm packages, packed by `npm pack` from staging folders: `factmem`, the launcher
//!   whose `facts` runs the binary of the platform package that npm chose among its
//!   `optionalDependencies` (the launcher's source is `npm/factmem/`), and
//!   `@factmem/cli-PLATFORM`, this host's binary;
//! - `SHA256SUMS`, in `sha256sum`'s format, over every other file of the folder.
//!
//! Every target the release builds is one row of [`TARGETS`]: its Rust triple, its npm
//! platform package (and the `os`, `cpu` and `libc` fields npm selects it by) and its wheel's
//! platform tag. The launcher's `optionalDependencies`, and so its list of supported
//! platforms, come from that table; the release workflow builds the same rows.
//!
//! # Reproducible
//!
//! Two runs on one machine give the same `SHA256SUMS` (`--check-reproducible` runs twice and
//! compares; the second run reuses the first one's builds, so it costs seconds):
//!
//! - the binary and the wheel's library are built with `--remap-path-prefix` for the
//!   workspace and `CARGO_HOME`, so no path of this machine is compiled in; both builds get the
//!   same `RUSTFLAGS` and the same features, so the dependencies they share are compiled once;
//! - `SOURCE_DATE_EPOCH` is the last commit's time (`git log -1 --format=%ct`; [`NO_GIT_EPOCH`]
//!   outside git, or the variable's own value when it is already set): maturin dates the
//!   wheel's zip entries with it, and the tarball's entries carry it as their mtime;
//! - the tarball's entries are sorted, owned by uid and gid 0 with empty owner names, with
//!   modes 0644 (0755 for the binary and the folders), in a gzip stream whose header has no
//!   file name, no mtime and "unknown" as its operating system;
//! - `npm pack` sets its own fixed mtime and modes, and the package.json files are written
//!   here with a fixed key order.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::cargo;
use crate::error::Error;

/// The maturin release the wheel is built with, as `.ci/py` pins it: another version may
/// write another wheel (a warning says so).
pub(crate) const MATURIN_VERSION: &str = "1.16.0";

/// `SOURCE_DATE_EPOCH` outside a git checkout (a source archive): 1980-01-01, the earliest
/// time a zip entry can carry.
const NO_GIT_EPOCH: u64 = 315_532_800;

/// The npm scope of the platform packages: `@factmem/cli-PLATFORM`.
const NPM_PLATFORM_PREFIX: &str = "@factmem/cli-";

/// The launcher's files in the repository, copied into its package as they are.
const LAUNCHER_SOURCE: &str = "npm/factmem";

/// The Node.js versions the launcher supports (it uses nothing newer than Node 18).
const NODE_ENGINES: &str = ">=18";

/// The shells `facts completions` writes a script for, with the file name each script is
/// conventionally installed under.
const COMPLETIONS: &[(&str, &str)] = &[
    ("bash", "facts.bash"),
    ("elvish", "facts.elv"),
    ("fish", "facts.fish"),
    ("powershell", "_facts.ps1"),
    ("zsh", "_facts"),
];

/// One target the release builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// The Rust target triple, as `rustc -vV` names the host.
    pub(crate) triple: &'static str,
    /// The platform key: the npm package is `@factmem/cli-KEY`, and the launcher computes the
    /// same key from `process.platform`, `process.arch` and the C library.
    pub(crate) npm: &'static str,
    /// The package's `os` field (Node's `process.platform`).
    pub(crate) os: &'static str,
    /// The package's `cpu` field (Node's `process.arch`).
    pub(crate) cpu: &'static str,
    /// The package's `libc` field (Linux only): npm skips the package on another C library.
    pub(crate) libc: Option<&'static str>,
    /// The platform tag of the release's wheel for this target.
    pub(crate) wheel: &'static str,
}

impl Target {
    /// The executable's file name on this target.
    pub(crate) fn exe(&self) -> &'static str {
        if self.os == "win32" {
            "facts.exe"
        } else {
            "facts"
        }
    }

    /// The npm platform package's name.
    pub(crate) fn npm_package(&self) -> String {
        format!("{NPM_PLATFORM_PREFIX}{}", self.npm)
    }
}

/// Every target the release builds (`.github/workflows/release.yml` has one matrix row for
/// each). The Linux wheels are manylinux (glibc 2.28, the release's build container); the
/// macOS ones start at the deployment target maturin defaults to.
pub(crate) const TARGETS: &[Target] = &[
    Target {
        triple: "x86_64-unknown-linux-gnu",
        npm: "linux-x64-gnu",
        os: "linux",
        cpu: "x64",
        libc: Some("glibc"),
        wheel: "manylinux_2_28_x86_64",
    },
    Target {
        triple: "aarch64-unknown-linux-gnu",
        npm: "linux-arm64-gnu",
        os: "linux",
        cpu: "arm64",
        libc: Some("glibc"),
        wheel: "manylinux_2_28_aarch64",
    },
    Target {
        triple: "x86_64-apple-darwin",
        npm: "darwin-x64",
        os: "darwin",
        cpu: "x64",
        libc: None,
        wheel: "macosx_10_12_x86_64",
    },
    Target {
        triple: "aarch64-apple-darwin",
        npm: "darwin-arm64",
        os: "darwin",
        cpu: "arm64",
        libc: None,
        wheel: "macosx_11_0_arm64",
    },
    Target {
        triple: "x86_64-pc-windows-msvc",
        npm: "win32-x64-msvc",
        os: "win32",
        cpu: "x64",
        libc: None,
        wheel: "win_amd64",
    },
];

/// What one run needs to know about the workspace and this machine.
struct Context {
    /// The workspace root.
    root: PathBuf,
    /// Cargo's target directory (`target/`, or `CARGO_TARGET_DIR`).
    target_dir: PathBuf,
    /// The release version: `factmem-cli`'s, which is the workspace's.
    version: String,
    /// Its description, for the npm packages.
    description: String,
    /// Its repository URL, for the npm packages.
    repository: String,
    /// Its licence expression (SPDX), for the npm packages.
    license: String,
    /// The host's Rust triple.
    host: String,
    /// The host's row of [`TARGETS`]; `None` on a host the release does not build, where no
    /// npm package is made.
    target: Option<Target>,
    /// `SOURCE_DATE_EPOCH`.
    epoch: u64,
    /// `CARGO_ENCODED_RUSTFLAGS` of both builds.
    rustflags: String,
}

/// Runs `cargo xtask dist [--check-reproducible]`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let mut check = false;
    for arg in args {
        match arg.as_str() {
            "--check-reproducible" => check = true,
            other => {
                return Err(Error::Usage(format!(
                    "`dist` takes only --check-reproducible, got `{other}`"
                )));
            }
        }
    }
    let start = Instant::now();
    let context = context().map_err(Error::Failed)?;
    let first = dist(&context).map_err(Error::Failed)?;
    if check {
        eprintln!("==> again, to check that the artifacts are reproducible");
        let second = dist(&context).map_err(Error::Failed)?;
        let differences = compare_sums(&first, &second);
        if !differences.is_empty() {
            return Err(Error::Failed(format!(
                "two runs gave different artifacts:\n{}",
                differences.join("\n")
            )));
        }
        eprintln!("reproducible: both runs gave the same SHA256SUMS");
    }
    eprintln!(
        "dist done in {:.1} s: {}",
        start.elapsed().as_secs_f64(),
        context.target_dir.join("dist").display()
    );
    Ok(())
}

/// Lines that differ between two `SHA256SUMS` texts, as `-` (first) and `+` (second) lines.
fn compare_sums(first: &str, second: &str) -> Vec<String> {
    let first: BTreeSet<&str> = first.lines().collect();
    let second: BTreeSet<&str> = second.lines().collect();
    let mut differences: Vec<String> = first
        .difference(&second)
        .map(|line| format!("- {line}"))
        .collect();
    differences.extend(second.difference(&first).map(|line| format!("+ {line}")));
    differences
}

/// Reads the workspace's metadata, the host triple, the epoch and the flags.
fn context() -> Result<Context, String> {
    let root = cargo::workspace_root()?;
    let output = capture(&mut cargo::command(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--locked",
    ])?)?;
    let metadata: serde_json::Value = serde_json::from_slice(&output)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let target_dir = metadata
        .get("target_directory")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from)
        .ok_or("cargo metadata named no target_directory")?;
    let cli = metadata
        .get("packages")
        .and_then(serde_json::Value::as_array)
        .and_then(|packages| {
            packages.iter().find(|package| {
                package.get("name").and_then(serde_json::Value::as_str) == Some("factmem-cli")
            })
        })
        .ok_or("cargo metadata did not list factmem-cli")?;
    let field = |name: &str| {
        cli.get(name)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("factmem-cli's manifest has no {name}"))
    };
    let host = host_triple()?;
    let target = TARGETS.iter().copied().find(|t| t.triple == host);
    Ok(Context {
        version: field("version")?,
        description: field("description")?,
        repository: field("repository")?,
        license: field("license")?,
        epoch: source_date_epoch(&root)?,
        rustflags: rustflags(&root, &target_dir)?,
        root,
        target_dir,
        host,
        target,
    })
}

/// The host's Rust triple: the `host:` line of `rustc -vV` (`$RUSTC` when set).
fn host_triple() -> Result<String, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = capture(Command::new(rustc).arg("-vV"))?;
    String::from_utf8_lossy(&output)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_owned())
        .ok_or_else(|| "rustc -vV printed no host line".to_owned())
}

/// `SOURCE_DATE_EPOCH`: the environment's when set, else the last commit's time, else
/// [`NO_GIT_EPOCH`].
fn source_date_epoch(root: &Path) -> Result<u64, String> {
    if let Some(value) = std::env::var_os("SOURCE_DATE_EPOCH") {
        let value = value.to_string_lossy();
        return value.trim().parse().map_err(|_| {
            format!("SOURCE_DATE_EPOCH={value:?} is not a number of seconds since 1970")
        });
    }
    let output = Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .current_dir(root)
        .stderr(Stdio::null())
        .output();
    match output {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            text.trim()
                .parse()
                .map_err(|_| format!("git log printed {text:?}, not a commit time"))
        }
        _ => Ok(NO_GIT_EPOCH),
    }
}

/// `CARGO_ENCODED_RUSTFLAGS` of both builds: the caller's `RUSTFLAGS` (or encoded flags),
/// then `--remap-path-prefix` of the workspace to `/factmem` and of `CARGO_HOME` to `/cargo`,
/// and of the target directory to `/target` when it is outside the workspace (build scripts'
/// output is compiled in from there).
fn rustflags(root: &Path, target_dir: &Path) -> Result<String, String> {
    let mut flags: Vec<String> = match std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        Ok(encoded) if !encoded.is_empty() => encoded.split('\x1f').map(str::to_owned).collect(),
        _ => std::env::var("RUSTFLAGS")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    };
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(|home| PathBuf::from(home).join(".cargo"))
            .ok_or("neither CARGO_HOME nor a home directory is set")?,
    };
    let mut remaps = vec![(root, "/factmem"), (home.as_path(), "/cargo")];
    if !target_dir.starts_with(root) {
        remaps.push((target_dir, "/target"));
    }
    for (from, to) in remaps {
        let from = std::path::absolute(from)
            .map_err(|e| format!("cannot make {} absolute: {e}", from.display()))?;
        let from = from
            .to_str()
            .ok_or_else(|| format!("the path {} is not UTF-8", from.display()))?;
        flags.push(format!("--remap-path-prefix={from}={to}"));
    }
    Ok(flags.join("\x1f"))
}

/// One artifact written: its file name in `target/dist/`.
type Artifact = String;

/// Builds every artifact into `target/dist/` (emptied first) and answers the text of its
/// `SHA256SUMS`.
fn dist(context: &Context) -> Result<String, String> {
    let out = context.target_dir.join("dist");
    if out.exists() {
        fs::remove_dir_all(&out).map_err(|e| format!("cannot empty {}: {e}", out.display()))?;
    }
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    eprintln!(
        "==> dist {} for {} (SOURCE_DATE_EPOCH={})",
        context.version, context.host, context.epoch
    );

    let binary = step("cargo build --release --locked -p factmem-cli", || {
        build_binary(context)
    })?;
    let wheel = step("maturin build --release --locked (the wheel)", || {
        build_wheel(context, &out)
    })?;
    let mut artifacts = vec![
        wheel,
        step("the release archive", || archive(context, &binary, &out))?,
    ];
    match context.target {
        Some(target) => {
            artifacts.extend(step("npm pack (launcher and platform package)", || {
                npm_packages(context, target, &binary, &out)
            })?);
        }
        None => eprintln!(
            "note: {} is not a release target ({}): no npm platform package is made",
            context.host,
            TARGETS
                .iter()
                .map(|t| t.triple)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    // Nothing else may be in the folder that SHA256SUMS vouches for.
    artifacts.sort();
    let found = file_names(&out)?;
    if found != artifacts {
        return Err(format!(
            "{} holds {found:?}, not the artifacts written: {artifacts:?}",
            out.display()
        ));
    }
    let sums = sha256sums(&out)?;
    fs::write(out.join("SHA256SUMS"), &sums)
        .map_err(|e| format!("cannot write SHA256SUMS: {e}"))?;
    print_sizes(&out)?;
    Ok(sums)
}

/// Runs one step between a `==>` line and its duration.
fn step<T>(name: &str, run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    eprintln!("==> {name}");
    let start = Instant::now();
    let result = run();
    eprintln!(
        "    {name}: {:.1} s{}",
        start.elapsed().as_secs_f64(),
        if result.is_ok() { "" } else { ", failed" }
    );
    result
}

/// Sets the environment both builds share on `command`: the flags and the epoch.
fn build_env(command: &mut Command, context: &Context) {
    command
        .env_remove("RUSTFLAGS")
        .env("CARGO_ENCODED_RUSTFLAGS", &context.rustflags)
        .env("SOURCE_DATE_EPOCH", context.epoch.to_string());
}

/// `cargo build --release --locked -p factmem-cli -p factmem-python --bin facts`; answers
/// the binary's path, after checking that `facts --version` names the release version.
///
/// `-p factmem-python` builds nothing of that package (`--bin facts` picks the one target),
/// but puts its dependencies into the feature resolution: without it the binary's crates are
/// resolved with fewer features than the wheel's (syn without `extra-traits`, which PyO3's
/// macros need), and maturin would compile every proc macro, and so nearly every crate,
/// a second time.
fn build_binary(context: &Context) -> Result<PathBuf, String> {
    let mut command = cargo::command(&[
        "build",
        "--release",
        "--locked",
        "-p",
        "factmem-cli",
        "-p",
        "factmem-python",
        "--bin",
        "facts",
    ])?;
    build_env(&mut command, context);
    expect_success(&mut command, "cargo build")?;
    let exe = if cfg!(windows) { "facts.exe" } else { "facts" };
    let binary = context.target_dir.join("release").join(exe);
    let version = capture(Command::new(&binary).arg("--version"))?;
    let version = String::from_utf8_lossy(&version);
    if !version
        .split_whitespace()
        .any(|word| word == context.version)
    {
        return Err(format!(
            "{} --version printed {:?}, not version {}",
            binary.display(),
            version.trim(),
            context.version
        ));
    }
    Ok(binary)
}

/// `maturin build --release --locked` of crates/factmem-python into `out`.
fn build_wheel(context: &Context, out: &Path) -> Result<Artifact, String> {
    let maturin = std::env::var_os("MATURIN").unwrap_or_else(|| "maturin".into());
    let version = maturin_version(&maturin)?;
    if version != format!("maturin {MATURIN_VERSION}") {
        eprintln!(
            "warning: {version}, not maturin {MATURIN_VERSION}: the wheel may differ from CI's"
        );
    }
    let manifest = context
        .root
        .join("crates")
        .join("factmem-python")
        .join("Cargo.toml");
    let mut command = Command::new(&maturin);
    command
        .args(["build", "--release", "--locked", "-m"])
        .arg(&manifest)
        .arg("--out")
        .arg(out)
        .current_dir(&context.root);
    build_env(&mut command, context);
    expect_success(&mut command, "maturin build")?;
    let wheels: Vec<String> = file_names(out)?
        .into_iter()
        .filter(|name| name.starts_with("factmem-") && name.ends_with(".whl"))
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        other => Err(format!(
            "maturin left {} wheels in {}: {other:?}",
            other.len(),
            out.display()
        )),
    }
}

/// What `maturin --version` prints, or an error that says how to install maturin.
fn maturin_version(maturin: &OsStr) -> Result<String, String> {
    let found = Command::new(maturin)
        .arg("--version")
        .stderr(Stdio::null())
        .output();
    match found {
        Ok(output) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        }
        _ => Err(format!(
            "maturin not found (looked for {}; set MATURIN to its path): \
             `pip install maturin=={MATURIN_VERSION}` installs it",
            Path::new(maturin).display()
        )),
    }
}

/// One file of the release archive, its path under the archive's top folder.
struct Entry {
    /// The path below the top folder, `/`-separated.
    path: String,
    /// The file's contents.
    data: Vec<u8>,
    /// Its mode: 0o755 for the binary, 0o644 for the rest.
    mode: u32,
}

/// Writes `facts-VERSION-TARGET.tar.gz`: the binary, the licences, the README, the
/// completions and the man pages.
fn archive(context: &Context, binary: &Path, out: &Path) -> Result<Artifact, String> {
    let top = format!("facts-{}-{}", context.version, context.host);
    let read =
        |path: &Path| fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let exe = binary
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("the binary has no file name")?;
    let mut entries = vec![Entry {
        path: exe.to_owned(),
        data: read(binary)?,
        mode: 0o755,
    }];
    for name in ["LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        entries.push(Entry {
            path: name.to_owned(),
            data: read(&context.root.join(name))?,
            mode: 0o644,
        });
    }
    for (shell, file) in COMPLETIONS {
        let script = capture(Command::new(binary).args(["completions", shell]))?;
        entries.push(Entry {
            path: format!("completions/{file}"),
            data: script,
            mode: 0o644,
        });
    }
    let man = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    expect_success(
        Command::new(binary).arg("man").arg("--out").arg(man.path()),
        "facts man",
    )?;
    for name in file_names(man.path())? {
        entries.push(Entry {
            data: read(&man.path().join(&name))?,
            path: format!("man/man1/{name}"),
            mode: 0o644,
        });
    }
    let name = format!("{top}.tar.gz");
    write_tar_gz(&out.join(&name), &top, entries, context.epoch)?;
    Ok(name)
}

/// Writes a reproducible `.tar.gz` of `entries` under the folder `top`: entries and their
/// folders sorted by path, each dated `epoch`, owned by 0:0 with empty owner names, in a gzip
/// stream without a file name or an mtime.
fn write_tar_gz(path: &Path, top: &str, entries: Vec<Entry>, epoch: u64) -> Result<(), String> {
    // Every folder of the tree, then the files: a folder sorts before its contents.
    let mut tree: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    tree.insert(format!("{top}/"), None);
    for entry in entries {
        let full = format!("{top}/{}", entry.path);
        let mut folder = String::new();
        let parts: Vec<&str> = full.split('/').collect();
        if let Some((_, folders)) = parts.split_last() {
            for part in folders {
                folder.push_str(part);
                folder.push('/');
                tree.entry(folder.clone()).or_insert(None);
            }
        }
        tree.insert(full, Some(entry));
    }
    let file =
        fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(file, flate2::Compression::best());
    let mut builder = tar::Builder::new(gzip);
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    for (name, entry) in &tree {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(epoch);
        header.set_uid(0);
        header.set_gid(0);
        header.set_username("").map_err(failed)?;
        header.set_groupname("").map_err(failed)?;
        match entry {
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder
                    .append_data(&mut header, name, std::io::empty())
                    .map_err(failed)?;
            }
            Some(entry) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(entry.mode);
                header.set_size(entry.data.len() as u64);
                builder
                    .append_data(&mut header, name, entry.data.as_slice())
                    .map_err(failed)?;
            }
        }
    }
    let gzip = builder.into_inner().map_err(failed)?;
    let mut file = gzip.finish().map_err(failed)?;
    file.flush().map_err(failed)
}

/// The `package.json` of one npm package; fields are written in this order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PackageJson<'a> {
    /// The package's name.
    name: String,
    /// The release version.
    version: &'a str,
    /// One line for the registry.
    description: String,
    /// The SPDX licence expression.
    license: &'a str,
    /// Where the source is.
    repository: Repository<'a>,
    /// The commands the package installs (the launcher's `facts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    bin: Option<BTreeMap<&'static str, &'static str>>,
    /// The operating systems npm installs the package on (platform packages).
    #[serde(skip_serializing_if = "Option::is_none")]
    os: Option<[&'static str; 1]>,
    /// The CPUs npm installs the package on (platform packages).
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<[&'static str; 1]>,
    /// The C library npm installs the package with (Linux platform packages).
    #[serde(skip_serializing_if = "Option::is_none")]
    libc: Option<[&'static str; 1]>,
    /// The platform packages, one per release target, at exactly this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    optional_dependencies: Option<BTreeMap<String, &'a str>>,
    /// The Node.js versions the package runs on.
    engines: Engines,
}

/// `repository` of a package.json.
#[derive(Serialize)]
struct Repository<'a> {
    /// Always `git`.
    r#type: &'static str,
    /// `git+URL.git`.
    url: String,
    /// The folder of this package's source in the repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    directory: Option<&'a str>,
}

/// `engines` of a package.json.
#[derive(Serialize)]
struct Engines {
    /// The supported Node.js versions.
    node: &'static str,
}

/// Packs the launcher `factmem` and this host's platform package into `out` with `npm pack`.
fn npm_packages(
    context: &Context,
    target: Target,
    binary: &Path,
    out: &Path,
) -> Result<Vec<Artifact>, String> {
    let stage = tempfile::tempdir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    let repository = |directory| Repository {
        r#type: "git",
        url: format!("git+{}.git", context.repository.trim_end_matches('/')),
        directory,
    };
    let copy = |from: &Path, to: &Path, mode: u32| {
        fs::copy(from, to)
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
        set_mode(to, mode)
    };
    let mkdir = |dir: &Path| {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
    };

    // The launcher: npm/factmem as committed, the licences, a generated package.json.
    let launcher = stage.path().join("factmem");
    mkdir(&launcher.join("bin"))?;
    let source = context.root.join(LAUNCHER_SOURCE);
    copy(
        &source.join("bin").join("facts.js"),
        &launcher.join("bin").join("facts.js"),
        0o755,
    )?;
    copy(
        &source.join("README.md"),
        &launcher.join("README.md"),
        0o644,
    )?;
    let manifest = PackageJson {
        name: "factmem".to_owned(),
        version: &context.version,
        description: context.description.clone(),
        license: &context.license,
        repository: repository(Some(LAUNCHER_SOURCE)),
        bin: Some(BTreeMap::from([("facts", "bin/facts.js")])),
        os: None,
        cpu: None,
        libc: None,
        optional_dependencies: Some(
            TARGETS
                .iter()
                .map(|t| (t.npm_package(), context.version.as_str()))
                .collect(),
        ),
        engines: Engines { node: NODE_ENGINES },
    };
    write_package(context, &launcher, &manifest)?;

    // The platform package: the binary in bin/, a README, the licences.
    let platform = stage.path().join(target.npm);
    mkdir(&platform.join("bin"))?;
    let installed = platform.join("bin").join(target.exe());
    copy(binary, &installed, 0o755)?;
    let readme = format!(
        "# {name}\n\nThe `facts` binary of [factmem](https://www.npmjs.com/package/factmem) for \
         {triple}. Install `factmem`, which depends on this package on this platform and runs \
         it as its `facts` command; this package alone installs no command.\n",
        name = target.npm_package(),
        triple = target.triple,
    );
    fs::write(platform.join("README.md"), readme)
        .map_err(|e| format!("cannot write the platform package's README: {e}"))?;
    set_mode(&platform.join("README.md"), 0o644)?;
    let manifest = PackageJson {
        name: target.npm_package(),
        version: &context.version,
        description: format!("The facts command of factmem for {}.", target.triple),
        license: &context.license,
        repository: repository(None),
        bin: None,
        os: Some([target.os]),
        cpu: Some([target.cpu]),
        libc: target.libc.map(|libc| [libc]),
        optional_dependencies: None,
        engines: Engines { node: NODE_ENGINES },
    };
    write_package(context, &platform, &manifest)?;

    let mut packed = Vec::new();
    for (dir, name) in [
        (&launcher, "factmem".to_owned()),
        (&platform, format!("factmem-cli-{}", target.npm)),
    ] {
        let mut command = npm();
        command
            .args([
                "pack",
                "--ignore-scripts",
                "--loglevel=warn",
                "--pack-destination",
            ])
            .arg(out)
            .current_dir(dir)
            .stdout(Stdio::null());
        expect_success(&mut command, "npm pack")?;
        let file = format!("{name}-{}.tgz", context.version);
        if !out.join(&file).is_file() {
            return Err(format!(
                "npm pack did not write {file} into {}",
                out.display()
            ));
        }
        packed.push(file);
    }
    Ok(packed)
}

/// Writes a package's `package.json` and copies the licences beside it.
fn write_package(context: &Context, dir: &Path, manifest: &PackageJson<'_>) -> Result<(), String> {
    let mut json = serde_json::to_string_pretty(manifest)
        .map_err(|e| format!("cannot write package.json: {e}"))?;
    json.push('\n');
    fs::write(dir.join("package.json"), json)
        .map_err(|e| format!("cannot write {}: {e}", dir.join("package.json").display()))?;
    set_mode(&dir.join("package.json"), 0o644)?;
    for name in ["LICENSE-MIT", "LICENSE-APACHE"] {
        fs::copy(context.root.join(name), dir.join(name))
            .map_err(|e| format!("cannot copy {name}: {e}"))?;
        set_mode(&dir.join(name), 0o644)?;
    }
    Ok(())
}

/// `npm` (`$NPM` when set; `npm.cmd` on Windows, which `Command` does not find as `npm`).
fn npm() -> Command {
    let npm = std::env::var_os("NPM")
        .unwrap_or_else(|| OsString::from(if cfg!(windows) { "npm.cmd" } else { "npm" }));
    Command::new(npm)
}

/// Gives `path` the `mode` (a no-op where files have no mode). `npm pack` keeps a file's
/// mode as it finds it, so every staged file gets its mode here, whatever the umask.
fn set_mode(path: &Path, mode: u32) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot set the mode of {}: {e}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

/// `SHA256SUMS` of every file in `dir` but itself: `HEX  NAME` lines sorted by name.
fn sha256sums(dir: &Path) -> Result<String, String> {
    let mut sums = String::new();
    for name in file_names(dir)? {
        if name == "SHA256SUMS" {
            continue;
        }
        let path = dir.join(&name);
        let data = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let digest = Sha256::digest(&data);
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        sums.push_str(&format!("{hex}  {name}\n"));
    }
    Ok(sums)
}

/// Prints each artifact's name and size.
fn print_sizes(dir: &Path) -> Result<(), String> {
    eprintln!("artifacts in {}:", dir.display());
    for name in file_names(dir)? {
        let path = dir.join(&name);
        let bytes = fs::metadata(&path)
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
            .len();
        eprintln!(
            "  {:>10} bytes  {:>8.1} MiB  {name}",
            bytes,
            bytes as f64 / 1_048_576.0
        );
    }
    Ok(())
}

/// The names of the files (not folders) in `dir`, sorted.
fn file_names(dir: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        if entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let name = entry.file_name();
            names.push(
                name.into_string()
                    .map_err(|name| format!("the file name {name:?} is not UTF-8"))?,
            );
        }
    }
    names.sort();
    Ok(names)
}

/// Runs `command` with inherited output and fails unless it succeeds.
fn expect_success(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command.status().map_err(|e| cannot_start(command, &e))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed: {status}"))
    }
}

/// Why `command` did not start, naming the tool that is missing when it is not found.
fn cannot_start(command: &Command, error: &std::io::Error) -> String {
    let program = command.get_program().to_string_lossy();
    if error.kind() == std::io::ErrorKind::NotFound {
        let hint = match program.as_ref() {
            "npm" | "npm.cmd" => {
                ": `cargo xtask dist` packs the npm packages with it \
                                  (Node.js 18 or later with npm; or set NPM to its path)"
            }
            _ => "",
        };
        format!("{program} not found{hint}")
    } else {
        format!("cannot run {program}: {error}")
    }
}

/// Runs `command` and answers its stdout, failing unless it succeeds.
fn capture(command: &mut Command) -> Result<Vec<u8>, String> {
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| cannot_start(command, &e))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!(
            "{:?} failed: {}",
            command.get_program(),
            output.status
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;
    use std::io::Read as _;

    fn entries() -> Vec<Entry> {
        vec![
            Entry {
                path: "man/man1/facts.1".into(),
                data: b"man".to_vec(),
                mode: 0o644,
            },
            Entry {
                path: "facts".into(),
                data: b"binary".to_vec(),
                mode: 0o755,
            },
            Entry {
                path: "completions/facts.bash".into(),
                data: b"complete".to_vec(),
                mode: 0o644,
            },
        ]
    }

    #[test]
    fn the_archive_is_sorted_dated_and_owned_by_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tar.gz");
        write_tar_gz(&path, "facts-1.0.0-x", entries(), 1_700_000_000).unwrap();
        let bytes = fs::read(&path).unwrap();
        // gzip: no mtime (bytes 4..8), no file name (FLG bit 3), OS "unknown".
        assert_eq!(&bytes[4..8], &[0, 0, 0, 0]);
        assert_eq!(bytes[3] & 0x08, 0);
        assert_eq!(bytes[9], 255);
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let header = entry.header();
            assert_eq!(header.mtime().unwrap(), 1_700_000_000);
            assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
            assert_eq!(header.username().unwrap(), Some(""));
            assert_eq!(header.groupname().unwrap(), Some(""));
            let mode = header.mode().unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            seen.push((path, mode, data));
        }
        let names: Vec<&str> = seen.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(
            names,
            [
                "facts-1.0.0-x/",
                "facts-1.0.0-x/completions/",
                "facts-1.0.0-x/completions/facts.bash",
                "facts-1.0.0-x/facts",
                "facts-1.0.0-x/man/",
                "facts-1.0.0-x/man/man1/",
                "facts-1.0.0-x/man/man1/facts.1",
            ]
        );
        let modes: Vec<u32> = seen.iter().map(|(_, m, _)| *m).collect();
        assert_eq!(modes, [0o755, 0o755, 0o644, 0o755, 0o755, 0o755, 0o644]);
        assert_eq!(seen[3].2, b"binary");
    }

    #[test]
    fn the_same_entries_give_the_same_bytes_whatever_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.tar.gz"), dir.path().join("b.tar.gz"));
        write_tar_gz(&a, "top", entries(), 1).unwrap();
        let mut reversed = entries();
        reversed.reverse();
        write_tar_gz(&b, "top", reversed, 1).unwrap();
        assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
        write_tar_gz(&b, "top", entries(), 2).unwrap();
        assert_ne!(
            fs::read(&a).unwrap(),
            fs::read(&b).unwrap(),
            "the epoch is in the archive"
        );
    }

    #[test]
    fn every_target_has_a_distinct_triple_and_npm_package() {
        let triples: BTreeSet<&str> = TARGETS.iter().map(|t| t.triple).collect();
        let keys: BTreeSet<&str> = TARGETS.iter().map(|t| t.npm).collect();
        assert_eq!(triples.len(), TARGETS.len());
        assert_eq!(keys.len(), TARGETS.len());
        for target in TARGETS {
            // The launcher's key: os-cpu, then the C library on Linux, msvc on Windows.
            let expected = match (target.os, target.libc) {
                ("linux", Some("glibc")) => format!("linux-{}-gnu", target.cpu),
                ("win32", None) => format!("win32-{}-msvc", target.cpu),
                (os, None) => format!("{os}-{}", target.cpu),
                other => panic!("unexpected target {other:?}"),
            };
            assert_eq!(target.npm, expected);
            assert_eq!(target.exe().ends_with(".exe"), target.os == "win32");
        }
    }

    #[test]
    fn the_release_workflow_builds_every_target() {
        let root = cargo::workspace_root().unwrap();
        let workflow = fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
        for target in TARGETS {
            assert!(
                workflow.contains(&format!("target: {}", target.triple)),
                "release.yml has no matrix row for {}",
                target.triple
            );
        }
    }

    #[test]
    fn the_launcher_package_json_has_a_fixed_key_order() {
        let manifest = PackageJson {
            name: "factmem".into(),
            version: "1.2.3",
            description: "d".into(),
            license: "MIT",
            repository: Repository {
                r#type: "git",
                url: "git+u.git".into(),
                directory: None,
            },
            bin: Some(BTreeMap::from([("facts", "bin/facts.js")])),
            os: None,
            cpu: None,
            libc: None,
            optional_dependencies: Some(
                TARGETS.iter().map(|t| (t.npm_package(), "1.2.3")).collect(),
            ),
            engines: Engines { node: NODE_ENGINES },
        };
        let json = serde_json::to_string(&manifest).unwrap();
        assert!(json.starts_with(
            r#"{"name":"factmem","version":"1.2.3","description":"d","license":"MIT","#
        ));
        assert!(json.contains(r#""optionalDependencies":{"@factmem/cli-darwin-arm64":"1.2.3","#));
        assert!(json.ends_with(r#""engines":{"node":">=18"}}"#));
        assert!(!json.contains("\"os\""));
    }

    #[test]
    fn a_missing_tool_is_named_with_how_to_get_it() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let message = cannot_start(&Command::new("npm"), &missing);
        assert!(message.starts_with("npm not found: "), "{message}");
        assert!(message.contains("Node.js 18"), "{message}");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let message = cannot_start(&Command::new("npm"), &denied);
        assert!(message.starts_with("cannot run npm: "), "{message}");

        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("maturin");
        let message = maturin_version(absent.as_os_str()).unwrap_err();
        assert!(message.contains("pip install maturin==1.16.0"), "{message}");
        assert!(message.contains(&absent.display().to_string()), "{message}");
    }

    #[test]
    fn differing_sums_are_reported_line_by_line() {
        assert!(compare_sums("a  x\n", "a  x\n").is_empty());
        assert_eq!(compare_sums("a  x\n", "b  x\n"), ["- a  x", "+ b  x"]);
    }
}
