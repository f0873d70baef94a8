//! `cargo xtask check`: the one command CI runs.
//!
//! Runs each step of [`STEPS`] in order from the workspace root, announcing
//! it with a `==> ...` line on stderr, and stops at the first failure. A
//! green `check` means formatting, lints (warnings are errors), unit,
//! integration, doc and tidy tests, documentation and benchmark builds are
//! all clean. Every step that resolves dependencies passes `--locked`, so a
//! stale `Cargo.lock` fails instead of being silently rewritten.

use std::time::Instant;

use crate::{Error, cargo};

/// One step of the check: a cargo invocation plus extra environment.
struct Step {
    /// Arguments passed to cargo.
    args: &'static [&'static str],
    /// Environment variables set for this step only.
    env: &'static [(&'static str, &'static str)],
}

/// The steps, in the order they run. Cheap, common failures come first.
const STEPS: &[Step] = &[
    Step {
        args: &["fmt", "--all", "--check"],
        env: &[],
    },
    Step {
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    // Unit, integration and doc tests, including xtask's tidy tests, with every feature
    // (the default build is compiled by the benchmark step).
    Step {
        args: &["test", "--workspace", "--all-features", "--locked"],
        env: &[],
    },
    Step {
        args: &[
            "doc",
            "--workspace",
            "--no-deps",
            "--all-features",
            "--locked",
        ],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
    },
    // Benchmarks must keep compiling; running them is not CI's job.
    Step {
        args: &["bench", "--workspace", "--no-run", "--locked"],
        env: &[],
    },
];

impl Step {
    /// The step as a shell-like command line, for progress and error messages.
    fn display(&self) -> String {
        let env = self
            .env
            .iter()
            .map(|(key, value)| format!("{key}='{value}' "));
        format!("{}cargo {}", env.collect::<String>(), self.args.join(" "))
    }

    /// Runs the step, failing unless cargo exits successfully.
    fn run(&self) -> Result<(), Error> {
        let name = self.display();
        let mut command = cargo::command(self.args).map_err(Error::Failed)?;
        command.envs(self.env.iter().copied());
        let status = command
            .status()
            .map_err(|err| Error::Failed(format!("step `{name}` could not start: {err}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Failed(format!("step `{name}` failed ({status})")))
        }
    }
}

/// Entry point of `cargo xtask check`; takes no arguments.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    crate::no_args("check", args)?;
    let start = Instant::now();
    for step in STEPS {
        eprintln!("==> {}", step.display());
        let step_start = Instant::now();
        step.run()?;
        eprintln!("    ok ({:.1}s)", step_start.elapsed().as_secs_f64());
    }
    eprintln!(
        "==> all {} checks passed ({:.1}s)",
        STEPS.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
