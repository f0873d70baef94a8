//! `cargo xtask fuzz --seconds N [NAME]`: runs the cargo-fuzz targets of `fuzz/` (the one
//! named, or all of them one after another) for N seconds each, and prints what each run did.
//!
//! ```sh
//! cargo xtask fuzz --seconds 600 contract   # one target for ten minutes
//! cargo xtask fuzz --seconds 60             # every target, a minute each
//! ```
//!
//! 1. cargo-fuzz needs a nightly toolchain. When `cargo +nightly` does not work, this asks
//!    rustup for one (`rustup toolchain install nightly --profile minimal`); without rustup,
//!    or when that fails (offline), it stops and says what is missing and how to get it.
//!    Likewise `cargo fuzz`: when it is missing, `cargo install cargo-fuzz --locked`.
//! 2. Every target is built once, optimized with debug assertions (overflow checks
//!    included) and without a sanitizer: the workspace denies `unsafe`, so AddressSanitizer
//!    would mostly halve the executions. The build goes to a target dir of its own,
//!    `$CARGO_TARGET_DIR/fuzz` (else `target/fuzz`), so it never invalidates the workspace's.
//! 3. Each target runs with `-max_total_time=N`, `-rss_limit_mb=2048` (an input that makes
//!    the process exceed 2 GB is a failure) and `-timeout=20` (an input that takes longer
//!    is a hang). The corpus it grows is `<target dir>/corpus/TARGET`; the committed seeds
//!    `fuzz/corpus/TARGET` are read, never written. A failing input is written to
//!    `fuzz/artifacts/TARGET/` (ignored by git); the whole libFuzzer log is
//!    `<target dir>/logs/TARGET.log`.
//! 4. It prints, per target, the wall time, the executions, the corpus (inputs and bytes)
//!    and the peak RSS, read from libFuzzer's output (`-print_final_stats=1` and its status
//!    lines), then the same as a Markdown table, and fails when any target failed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cargo;
use crate::error::Error;

/// Each input's time limit, in seconds: longer is a hang.
const INPUT_TIMEOUT_SECONDS: u64 = 20;

/// The memory limit of a run, in MB.
const RSS_LIMIT_MB: u64 = 2048;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    /// How long each target runs.
    seconds: u64,
    /// The one target to run; all of them when `None`.
    target: Option<String>,
}

/// What one run did, read from libFuzzer's output.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    /// Inputs executed.
    executions: Option<u64>,
    /// Inputs in the corpus at the end.
    corpus_inputs: Option<u64>,
    /// Their total size in bytes.
    corpus_bytes: Option<u64>,
    /// The peak resident set size, in MB.
    peak_rss_mb: Option<u64>,
    /// What went wrong: libFuzzer's error line or a panic message.
    failure: Option<String>,
    /// Where libFuzzer wrote the failing input.
    artifact: Option<String>,
}

/// One target's run.
#[derive(Debug)]
struct Run {
    target: String,
    seconds: f64,
    stats: Stats,
    /// Whether the run failed (a crash, a hang, too much memory, or a failed start).
    failed: bool,
}

pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let options = parse_args(args)?;
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let fuzz_dir = root.join("fuzz");
    if !fuzz_dir.join("Cargo.toml").is_file() {
        return Err(Error::Failed(format!(
            "no fuzz crate at {}",
            fuzz_dir.display()
        )));
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("fuzz");
    ensure_nightly()?;
    ensure_cargo_fuzz()?;
    let known = list_targets(&root)?;
    let targets = match options.target {
        Some(target) if known.contains(&target) => vec![target],
        Some(target) => {
            return Err(Error::Usage(format!(
                "unknown fuzz target `{target}`; the targets are: {}",
                known.join(", ")
            )));
        }
        None => known,
    };
    eprintln!("building the fuzz targets into {}", target_dir.display());
    let status = nightly(&["fuzz", "build"])
        .args(build_flags(&target_dir))
        .current_dir(&root)
        .status()
        .map_err(|e| Error::Failed(format!("cannot run `cargo +nightly fuzz build`: {e}")))?;
    if !status.success() {
        return Err(Error::Failed(format!(
            "`cargo +nightly fuzz build` failed ({status})"
        )));
    }
    let mut runs = Vec::new();
    for target in &targets {
        let run = run_target(&root, &target_dir, target, options.seconds)?;
        eprintln!("{}", summary(&run));
        runs.push(run);
    }
    print_table(&runs);
    let failed: Vec<&str> = runs
        .iter()
        .filter(|run| run.failed)
        .map(|run| run.target.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Failed(format!(
            "fuzz target(s) failed: {} (see the logs and fuzz/artifacts)",
            failed.join(", ")
        )))
    }
}

/// Parses `--seconds N [TARGET]` (or `--seconds=N`), in any order.
fn parse_args(args: &[String]) -> Result<Options, Error> {
    let mut seconds = None;
    let mut target = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value =
            if arg == "--seconds" {
                Some(args.next().map(String::as_str).ok_or_else(|| {
                    Error::Usage("`--seconds` needs a number of seconds".to_owned())
                })?)
            } else {
                arg.strip_prefix("--seconds=")
            };
        if let Some(value) = value {
            match value.parse::<u64>() {
                Ok(n) if n > 0 => seconds = Some(n),
                _ => {
                    return Err(Error::Usage(format!(
                        "`--seconds` takes a positive whole number of seconds, got `{value}`"
                    )));
                }
            }
        } else if arg.starts_with('-') {
            return Err(Error::Usage(format!(
                "`fuzz` does not know the option `{arg}`"
            )));
        } else if let Some(first) = &target {
            return Err(Error::Usage(format!(
                "`fuzz` runs one target or all of them: got `{first}` and `{arg}`"
            )));
        } else {
            target = Some(arg.clone());
        }
    }
    let seconds = seconds.ok_or_else(|| {
        Error::Usage("`fuzz` needs `--seconds N`, how long each target runs".to_owned())
    })?;
    Ok(Options { seconds, target })
}

/// `cargo +nightly ARGS`, through the rustup proxy on the `PATH` (`$CARGO` names one
/// toolchain's cargo, which knows no `+nightly`).
fn nightly(args: &[&str]) -> Command {
    let mut command = Command::new("cargo");
    command.arg("+nightly").args(args);
    // The toolchain of the `cargo xtask` that started us must not pin the nightly one.
    for var in ["RUSTUP_TOOLCHAIN", "RUSTC", "RUSTDOC", "CARGO"] {
        command.env_remove(var);
    }
    command
}

/// Whether `command` runs and succeeds, its output discarded.
fn succeeds(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Makes sure `cargo +nightly` works, installing the toolchain with rustup if it can.
fn ensure_nightly() -> Result<(), Error> {
    if succeeds(&mut nightly(&["--version"])) {
        return Ok(());
    }
    if !succeeds(Command::new("rustup").arg("--version")) {
        return Err(Error::Failed(
            "cargo-fuzz needs a nightly toolchain, and `cargo +nightly` does not work here; \
             rustup, which would install one, is not on the PATH either. Install rustup \
             (https://rustup.rs), then `rustup toolchain install nightly`."
                .to_owned(),
        ));
    }
    eprintln!(
        "installing the nightly toolchain: rustup toolchain install nightly --profile minimal"
    );
    let installed = Command::new("rustup")
        .args(["toolchain", "install", "nightly", "--profile", "minimal"])
        .status()
        .is_ok_and(|status| status.success());
    if installed && succeeds(&mut nightly(&["--version"])) {
        Ok(())
    } else {
        Err(Error::Failed(
            "cargo-fuzz needs a nightly toolchain, and `rustup toolchain install nightly` \
             failed (offline?); install it by hand, then run this again."
                .to_owned(),
        ))
    }
}

/// Makes sure `cargo fuzz` works, installing cargo-fuzz if it can.
fn ensure_cargo_fuzz() -> Result<(), Error> {
    if succeeds(&mut nightly(&["fuzz", "--version"])) {
        return Ok(());
    }
    eprintln!("installing cargo-fuzz: cargo install cargo-fuzz --locked");
    let installed = Command::new("cargo")
        .args(["install", "cargo-fuzz", "--locked"])
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .is_ok_and(|status| status.success());
    if installed && succeeds(&mut nightly(&["fuzz", "--version"])) {
        Ok(())
    } else {
        Err(Error::Failed(
            "cargo-fuzz is missing and `cargo install cargo-fuzz --locked` failed (offline?); \
             install it (https://github.com/rust-fuzz/cargo-fuzz), then run this again."
                .to_owned(),
        ))
    }
}

/// The targets `cargo fuzz list` names.
fn list_targets(root: &Path) -> Result<Vec<String>, Error> {
    let output = nightly(&["fuzz", "list", "--fuzz-dir", "fuzz"])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::Failed(format!("cannot run `cargo +nightly fuzz list`: {e}")))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "`cargo +nightly fuzz list` failed ({})",
            output.status
        )));
    }
    let targets: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        return Err(Error::Failed(
            "`cargo fuzz list` names no target".to_owned(),
        ));
    }
    Ok(targets)
}

/// The flags of both `cargo fuzz build` and `cargo fuzz run`, so the run reuses the build.
fn build_flags(target_dir: &Path) -> Vec<String> {
    vec![
        "--fuzz-dir".to_owned(),
        "fuzz".to_owned(),
        "--release".to_owned(),
        "--debug-assertions".to_owned(),
        "--sanitizer".to_owned(),
        "none".to_owned(),
        "--target-dir".to_owned(),
        target_dir.display().to_string(),
    ]
}

/// Runs one target for `seconds`; its output goes to a log file, then is read back.
fn run_target(root: &Path, target_dir: &Path, target: &str, seconds: u64) -> Result<Run, Error> {
    let corpus = target_dir.join("corpus").join(target);
    let logs = target_dir.join("logs");
    for dir in [&corpus, &logs] {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Failed(format!("cannot create {}: {e}", dir.display())))?;
    }
    let log_path = logs.join(format!("{target}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| Error::Failed(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| Error::Failed(format!("cannot share {}: {e}", log_path.display())))?;
    let mut command = nightly(&["fuzz", "run", target]);
    command.args(build_flags(target_dir)).arg(&corpus);
    let seeds = root.join("fuzz").join("corpus").join(target);
    if seeds.is_dir() {
        command.arg(&seeds);
    }
    command.arg("--").args([
        format!("-max_total_time={seconds}"),
        format!("-rss_limit_mb={RSS_LIMIT_MB}"),
        format!("-timeout={INPUT_TIMEOUT_SECONDS}"),
        "-print_final_stats=1".to_owned(),
    ]);
    eprintln!(
        "fuzzing {target} for {seconds} s (log: {})",
        log_path.display()
    );
    let start = Instant::now();
    let status = command
        .current_dir(root)
        .stdout(log)
        .stderr(log_err)
        .status()
        .map_err(|e| Error::Failed(format!("cannot run `cargo +nightly fuzz run`: {e}")))?;
    let seconds = start.elapsed().as_secs_f64();
    let text = std::fs::read(&log_path)
        .map_err(|e| Error::Failed(format!("cannot read {}: {e}", log_path.display())))?;
    let stats = parse_stats(&String::from_utf8_lossy(&text));
    let failed = !status.success() || stats.failure.is_some();
    Ok(Run {
        target: target.to_owned(),
        seconds,
        stats,
        failed,
    })
}

/// Reads libFuzzer's output: the final stats, the last status line's corpus, the largest
/// RSS any line reports, and the first failure.
fn parse_stats(output: &str) -> Stats {
    let mut stats = Stats::default();
    for line in output.lines() {
        let line = line.trim();
        if let Some(value) = line.strip_prefix("stat::number_of_executed_units:") {
            stats.executions = value.trim().parse().ok().or(stats.executions);
        } else if let Some(value) = line.strip_prefix("stat::peak_rss_mb:") {
            if let Ok(mb) = value.trim().parse::<u64>() {
                stats.peak_rss_mb = Some(stats.peak_rss_mb.map_or(mb, |peak| peak.max(mb)));
            }
        } else if line.starts_with('#') {
            status_line(line, &mut stats);
        } else if stats.failure.is_none()
            && (line.starts_with("==") && line.contains("ERROR: libFuzzer")
                || line.contains("panicked at"))
        {
            stats.failure = Some(line.to_owned());
        }
        if let Some((_, path)) = line.split_once("Test unit written to ") {
            stats.artifact = Some(path.trim().to_owned());
        }
    }
    stats
}

/// Reads a status line, `#4096 pulse cov: 712 ft: 1390 corp: 120/4096b exec/s: 2048 rss: 57Mb`.
fn status_line(line: &str, stats: &mut Stats) {
    let mut words = line.split_whitespace();
    if let Some(runs) = words
        .next()
        .and_then(|first| first.strip_prefix('#'))
        .and_then(|n| n.parse::<u64>().ok())
    {
        // The final stats, when present, come later and win.
        stats.executions = Some(stats.executions.map_or(runs, |n| n.max(runs)));
    }
    while let Some(word) = words.next() {
        match word {
            "corp:" => {
                if let Some((inputs, size)) = words.next().and_then(|v| v.split_once('/')) {
                    stats.corpus_inputs = inputs.parse().ok().or(stats.corpus_inputs);
                    stats.corpus_bytes = parse_size(size).or(stats.corpus_bytes);
                }
            }
            "rss:" => {
                if let Some(mb) = words
                    .next()
                    .and_then(|v| v.strip_suffix("Mb"))
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    stats.peak_rss_mb = Some(stats.peak_rss_mb.map_or(mb, |peak| peak.max(mb)));
                }
            }
            _ => {}
        }
    }
}

/// Reads libFuzzer's sizes: `512b`, `12Kb`, `3Mb`.
fn parse_size(size: &str) -> Option<u64> {
    let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = digits.parse().ok()?;
    match unit {
        "b" => Some(n),
        "Kb" => n.checked_mul(1 << 10),
        "Mb" => n.checked_mul(1 << 20),
        "Gb" => n.checked_mul(1 << 30),
        _ => None,
    }
}

/// A figure, or `?` when libFuzzer did not report it.
fn figure(value: Option<u64>) -> String {
    value.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

/// One line about a run.
fn summary(run: &Run) -> String {
    let stats = &run.stats;
    let mut line = format!(
        "{}: {:.0} s, {} executions, corpus {} inputs ({} bytes), peak RSS {} MB: {}",
        run.target,
        run.seconds,
        figure(stats.executions),
        figure(stats.corpus_inputs),
        figure(stats.corpus_bytes),
        figure(stats.peak_rss_mb),
        if run.failed { "FAILED" } else { "ok" },
    );
    if let Some(failure) = &stats.failure {
        line.push_str(&format!("\n  {failure}"));
    }
    if let Some(artifact) = &stats.artifact {
        line.push_str(&format!("\n  input: {artifact}"));
    }
    line
}

/// The runs as a Markdown table, on stdout.
fn print_table(runs: &[Run]) {
    use std::io::Write as _;
    let mut out = String::from(
        "| target | duration | executions | corpus (inputs / bytes) | peak RSS | result |\n\
         |---|---|---|---|---|---|\n",
    );
    for run in runs {
        let stats = &run.stats;
        out.push_str(&format!(
            "| `{}` | {:.0} s | {} | {} / {} | {} MB | {} |\n",
            run.target,
            run.seconds,
            figure(stats.executions),
            figure(stats.corpus_inputs),
            figure(stats.corpus_bytes),
            figure(stats.peak_rss_mb),
            if run.failed { "failed" } else { "no crash" },
        ));
    }
    // Nobody to tell when stdout is closed.
    let _ = std::io::stdout().write_all(out.as_bytes());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn usage(words: &[&str]) -> String {
        match parse_args(&args(words)) {
            Err(Error::Usage(message)) => message,
            other => panic!("{words:?} should be a usage error, got {other:?}"),
        }
    }

    #[test]
    fn arguments_name_the_seconds_and_at_most_one_target() {
        let options = |seconds, target: Option<&str>| Options {
            seconds,
            target: target.map(str::to_owned),
        };
        for (words, expected) in [
            (&["--seconds", "600"][..], options(600, None)),
            (&["--seconds=5", "contract"], options(5, Some("contract"))),
            (&["mcp", "--seconds", "10"], options(10, Some("mcp"))),
        ] {
            assert_eq!(parse_args(&args(words)).unwrap(), expected, "{words:?}");
        }
        assert!(usage(&[]).contains("--seconds N"));
        assert!(usage(&["contract"]).contains("--seconds N"));
        assert!(usage(&["--seconds"]).contains("needs a number"));
        assert!(usage(&["--seconds", "0"]).contains("positive"));
        assert!(usage(&["--seconds", "ten"]).contains("`ten`"));
        assert!(usage(&["--seconds=-1"]).contains("`-1`"));
        assert!(usage(&["--seconds", "1", "--jobs", "2"]).contains("`--jobs`"));
        assert!(usage(&["--seconds", "1", "a", "b"]).contains("`a` and `b`"));
    }

    /// The end of a real run (libFuzzer 19, `-print_final_stats=1`), shortened.
    const FINISHED: &str = "\
INFO: Seed: 3383409541
INFO: Loaded 1 modules   (48213 inline 8-bit counters)
#2\tINITED cov: 310 ft: 311 corp: 1/1b exec/s: 0 rss: 41Mb
#1024\tpulse  cov: 1710 ft: 4410 corp: 214/9874b lim: 14 exec/s: 512 rss: 61Mb
#1198\tNEW    cov: 1712 ft: 4415 corp: 215/10Kb lim: 14 exec/s: 599 rss: 63Mb L: 9/14 MS: 1 ChangeBit-
#5881\tDONE   cov: 1790 ft: 4990 corp: 260/2Mb lim: 48 exec/s: 980 rss: 64Mb
Done 5881 runs in 6 second(s)
stat::number_of_executed_units: 5881
stat::average_exec_per_sec:     980
stat::new_units_added:          259
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              66
";

    #[test]
    fn a_finished_run_reports_executions_corpus_and_peak_rss() {
        assert_eq!(
            parse_stats(FINISHED),
            Stats {
                executions: Some(5881),
                corpus_inputs: Some(260),
                corpus_bytes: Some(2 << 20),
                peak_rss_mb: Some(66),
                failure: None,
                artifact: None,
            }
        );
        // Without the final stats, the status lines give the figures.
        let status_only: String = FINISHED
            .lines()
            .filter(|l| !l.starts_with("stat::"))
            .map(|l| format!("{l}\n"))
            .collect();
        let stats = parse_stats(&status_only);
        assert_eq!(
            (stats.executions, stats.peak_rss_mb, stats.corpus_inputs),
            (Some(5881), Some(64), Some(260))
        );
        assert_eq!(parse_size("10Kb"), Some(10 << 10));
        assert_eq!(parse_size("512b"), Some(512));
        assert_eq!(parse_size("Kb"), None);
        assert_eq!(parse_size("7Tb"), None);
    }

    #[test]
    fn a_crash_names_the_failure_and_the_input() {
        let output = "\
#4096\tpulse  cov: 900 ft: 2000 corp: 80/3Kb lim: 43 exec/s: 2048 rss: 50Mb

thread '<unnamed>' panicked at fuzz_targets/contract.rs:77:9:
7 tokens accepted under a budget of 6
==4242== ERROR: libFuzzer: deadly signal
artifact_prefix='/work/main/fuzz/artifacts/contract/'; Test unit written to /work/main/fuzz/artifacts/contract/crash-da39a3ee
stat::number_of_executed_units: 4101
stat::peak_rss_mb:              51
";
        let stats = parse_stats(output);
        assert_eq!(stats.executions, Some(4101));
        assert_eq!(stats.peak_rss_mb, Some(51));
        assert!(
            stats
                .failure
                .unwrap()
                .contains("panicked at fuzz_targets/contract.rs")
        );
        assert_eq!(
            stats.artifact.as_deref(),
            Some("/work/main/fuzz/artifacts/contract/crash-da39a3ee")
        );
        let oom =
            parse_stats("==7== ERROR: libFuzzer: out-of-memory (used: 2100Mb; exceeds: 2048Mb)\n");
        assert!(oom.failure.unwrap().contains("out-of-memory"));
    }
}
