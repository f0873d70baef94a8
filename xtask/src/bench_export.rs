//! `cargo xtask bench-export [--facts N,M…] [--runs R]`: the throughput and peak RSS of
//! `facts mem import` and `facts mem export` at each size, on SQLite and (when
//! `FACTMEM_PG_URL` is set) on PostgreSQL.
//!
//! 1. Builds the release `facts` (`cargo build --release -p factmem-cli`).
//! 2. Writes an export of N facts ([`synthetic`]): facts of 20,000 subjects, each batch of
//!    100 facts a new batch, a statement on each, metadata on every tenth, every
//!    twentieth an ended version with its successor; an episode of four messages per
//!    1,000 facts; 100 aliases; six profile versions. It is written with the same
//!    `ExportWriter` as `facts mem export`, so the file is one the command writes.
//! 3. For each backend: `facts mem import FILE` into a new scope, then `facts mem export
//!    --output OUT` of it, each under GNU time (`/usr/bin/time -f "%e %M"`: seconds and
//!    peak RSS in KiB). The export must be the file's bytes again.
//! 4. Prints one line per backend, size and direction: records per second and peak RSS in
//!    MiB (the median over the runs), as docs/benchmarks.md records them.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

use fact_model::{
    Message, MessageRole, Metadata, ProfileField, SessionFact, SourceRole, Tag, Timestamp,
};
use fact_store::{
    Alias, Episode, ExportHeader, ExportRecord, ExportWriter, ProfileEntry, SnapshotRecord,
};

use crate::cargo;
use crate::error::Error;

/// GNU time, for each command's time and peak RSS.
const GNU_TIME: &str = "/usr/bin/time";
/// The scope the synthetic export names, and each backend imports into.
const SCOPE: &str = "bench:export";

/// Runs the benchmark.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let mut sizes = vec![100_000usize, 1_000_000];
    let mut runs = 1usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| Error::Usage(format!("{arg} needs a value")))?;
        match arg.as_str() {
            "--facts" => {
                sizes = value
                    .split(',')
                    .map(|n| n.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| Error::Usage(format!("--facts {value}: {e}")))?;
            }
            "--runs" => {
                runs = value
                    .parse()
                    .map_err(|e| Error::Usage(format!("--runs {value}: {e}")))?;
            }
            other => return Err(Error::Usage(format!("unknown argument {other}"))),
        }
    }
    if !Path::new(GNU_TIME).exists() {
        return Err(Error::Failed(format!(
            "{GNU_TIME} is missing: `apt-get install time`"
        )));
    }
    let status = cargo::command(&["build", "--release", "--locked", "-p", "factmem-cli"])
        .map_err(Error::Failed)?
        .status()
        .map_err(|e| Error::Failed(format!("cannot run cargo: {e}")))?;
    if !status.success() {
        return Err(Error::Failed(format!("the release build failed: {status}")));
    }
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let facts = root.join("target/release/facts");
    let dir = tempfile::TempDir::new().map_err(|e| Error::Failed(format!("temp dir: {e}")))?;
    let pg = std::env::var("FACTMEM_PG_URL").ok();
    let mut out = std::io::stdout();
    let mut print = |line: String| -> Result<(), Error> {
        writeln!(out, "{line}").map_err(|e| Error::Failed(format!("cannot write: {e}")))
    };
    print("backend   facts      direction  records/s   peak RSS MiB  seconds".to_owned())?;
    for &size in &sizes {
        let mut backends: Vec<(&str, String)> = vec![(
            "sqlite",
            dir.path().join(format!("{size}.db")).display().to_string(),
        )];
        if let Some(url) = &pg {
            backends.push(("postgres", url.clone()));
        }
        let mut records = 0;
        for (backend, db) in &backends {
            let mut imports = Vec::new();
            let mut exports = Vec::new();
            for run in 0..runs {
                let scope = format!("{SCOPE}:{size}:{run}:{}", std::process::id());
                let file = dir.path().join("import.jsonl");
                records = synthetic(size, &scope, &file)?;
                imports.push(timed(
                    &facts,
                    &["mem", "--db", db, "--scope", &scope, "import"],
                    &file,
                )?);
                let out = dir.path().join("out.jsonl");
                exports.push(timed(
                    &facts,
                    &["mem", "--db", db, "--scope", &scope, "export", "--output"],
                    &out,
                )?);
                if !same_bytes(&out, &file)? {
                    return Err(Error::Failed(format!(
                        "{backend}: the export of {size} facts is not the file imported"
                    )));
                }
                // The next run and size start from an empty scope.
                let erase = Command::new(&facts)
                    .args(["mem", "--db", db, "--scope", &scope, "erase", "--yes"])
                    .output()
                    .map_err(|e| Error::Failed(format!("cannot run facts: {e}")))?;
                if !erase.status.success() {
                    return Err(Error::Failed(format!(
                        "erase failed: {}",
                        String::from_utf8_lossy(&erase.stderr)
                    )));
                }
            }
            for (direction, figures) in [("import", imports), ("export", exports)] {
                let (seconds, kib) = median(&figures);
                print(format!(
                    "{backend:<9} {size:<10} {direction:<10} {:<11.0} {:<13.1} {seconds:.2}",
                    records as f64 / seconds.max(1e-9),
                    kib as f64 / 1024.0
                ))?;
            }
        }
    }
    Ok(())
}

/// Runs `facts ARGS PATH` under GNU time: its seconds and peak RSS (KiB).
fn timed(facts: &Path, args: &[&str], path: &Path) -> Result<(f64, u64), Error> {
    let output = Command::new(GNU_TIME)
        .args(["-f", "%e %M"])
        .arg(facts)
        .args(args)
        .arg(path)
        .output()
        .map_err(|e| Error::Failed(format!("cannot run {GNU_TIME}: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(Error::Failed(format!("facts {args:?} failed: {stderr}")));
    }
    let last = stderr.lines().last().unwrap_or_default();
    let mut parts = last.split_whitespace();
    let seconds = parts.next().and_then(|s| s.parse::<f64>().ok());
    let kib = parts.next().and_then(|s| s.parse::<u64>().ok());
    match (seconds, kib) {
        (Some(seconds), Some(kib)) => Ok((seconds, kib)),
        _ => Err(Error::Failed(format!(
            "cannot read GNU time's line {last:?}"
        ))),
    }
}

/// Whether the files at `a` and `b` hold the same bytes (compared a block at a time).
fn same_bytes(a: &Path, b: &Path) -> Result<bool, Error> {
    use std::io::Read;
    let open = |path: &Path| {
        std::fs::File::open(path)
            .map(|f| std::io::BufReader::with_capacity(1 << 20, f))
            .map_err(|e| Error::Failed(format!("opening {}: {e}", path.display())))
    };
    let (mut a, mut b) = (open(a)?, open(b)?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut x).map_err(|e| Error::Failed(e.to_string()))?;
        let mut filled = 0;
        while filled < n {
            let m = b
                .read(y.get_mut(filled..n).unwrap_or_default())
                .map_err(|e| Error::Failed(e.to_string()))?;
            if m == 0 {
                return Ok(false);
            }
            filled += m;
        }
        if x.get(..n) != y.get(..n) {
            return Ok(false);
        }
        if n == 0 {
            let mut rest = [0u8; 1];
            return Ok(b
                .read(&mut rest)
                .map_err(|e| Error::Failed(e.to_string()))?
                == 0);
        }
    }
}

/// The median seconds and KiB of `figures` (each sorted on its own).
fn median(figures: &[(f64, u64)]) -> (f64, u64) {
    let mut seconds: Vec<f64> = figures.iter().map(|f| f.0).collect();
    let mut kib: Vec<u64> = figures.iter().map(|f| f.1).collect();
    seconds.sort_by(f64::total_cmp);
    kib.sort_unstable();
    let middle = figures.len() / 2;
    (
        seconds.get(middle).copied().unwrap_or(0.0),
        kib.get(middle).copied().unwrap_or(0),
    )
}

/// Writes the synthetic export of `facts` facts of `scope` to `path`; answers its record
/// count.
pub(crate) fn synthetic(facts: usize, scope: &str, path: &Path) -> Result<u64, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::Failed(format!("synthetic export: {e}"));
    let file = std::fs::File::create(path).map_err(|e| failed(&e))?;
    let mut writer = ExportWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        &ExportHeader::new(scope, None),
    )
    .map_err(|e| failed(&e))?;
    let at = |n: usize| {
        Timestamp::from_unix_secs(1_700_000_000 + i64::try_from(n).unwrap_or(i64::MAX / 2))
            .unwrap_or(Timestamp::UNIX_EPOCH)
    };
    let words = [
        "pytest", "lisbon", "cello", "nurse", "oscar", "rust", "garden", "marathon", "vinyl",
        "sushi",
    ];
    let mut n = 0usize;
    while n < facts {
        let subject = format!("person{}", n % 20_000);
        let relation = format!("likes_{}", n / 20_000 % 50);
        let word = words.get(n % words.len()).copied().unwrap_or("x");
        let object = format!("{word} {n}");
        let build = |object: &str, from: usize| {
            let mut builder = SessionFact::builder(&subject, &relation, object)
                .tag(Tag::Preference)
                .source(format!("ep_{}", n / 1000), SourceRole::Extractor)
                .statement(format!(
                    "{subject} likes {object}, said in conversation {n}."
                ))
                .valid_from(at(from))
                .recorded_at(at(from));
            if n.is_multiple_of(10) {
                builder = builder.metadata(
                    Metadata::from_assignments(["project=rlm", "turn=3"]).unwrap_or_default(),
                );
            }
            builder.build()
        };
        let batch = (n / 100 + 1) as u64;
        if n % 20 == 19 && n + 1 < facts {
            // An ended version and its successor.
            let newer = build(&format!("{object} again"), n + 1).map_err(|e| failed(&e))?;
            let older = build(&object, n)
                .and_then(|f| f.superseded_at(at(n + 1), newer.id()))
                .map_err(|e| failed(&e))?;
            for fact in [older, newer] {
                writer
                    .write_record(&ExportRecord::Fact(SnapshotRecord { batch, fact }))
                    .map_err(|e| failed(&e))?;
            }
            n += 2;
            continue;
        }
        let fact = build(&object, n).map_err(|e| failed(&e))?;
        writer
            .write_record(&ExportRecord::Fact(SnapshotRecord { batch, fact }))
            .map_err(|e| failed(&e))?;
        n += 1;
    }
    for e in 0..facts / 1000 {
        let messages = (0..4)
            .map(|turn| {
                let role = if turn % 2 == 0 {
                    MessageRole::User
                } else {
                    MessageRole::Assistant
                };
                Message::new(role, format!("turn {turn} of conversation {e}")).at(at(e))
            })
            .collect();
        let episode = Episode::new(format!("conversation {e}"), "a chat", messages, at(e));
        writer
            .write_record(&ExportRecord::Episode(episode))
            .map_err(|e| failed(&e))?;
    }
    for a in 0..100 {
        let alias = Alias {
            alias: format!("p{a}"),
            entity: format!("person{a}"),
            at: at(a),
        };
        writer
            .write_record(&ExportRecord::Alias(alias))
            .map_err(|e| failed(&e))?;
    }
    for (i, field) in ProfileField::ALL.iter().enumerate() {
        let entry = ProfileEntry {
            field: *field,
            text: format!("text {i}"),
            at: at(i),
        };
        writer
            .write_record(&ExportRecord::Profile(entry))
            .map_err(|e| failed(&e))?;
    }
    let (_, end) = writer.finish().map_err(|e| failed(&e))?;
    Ok(end.records)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_synthetic_export_is_one_every_store_imports_whole() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("s.jsonl");
        let records = synthetic(2_000, "s", &path).unwrap();
        // 2,000 versions, 2 episodes, 100 aliases, 6 profile versions.
        assert_eq!(records, 2_000 + 2 + 100 + 6);
        let store = fact_store::InMemoryLongTermStore::default();
        use fact_store::{LongTermStore, SessionFactStore};
        let report = store
            .import_from(&fact_store::ExportFile::new(&path))
            .unwrap();
        assert_eq!(report.facts.imported, 2_000, "{report:?}");
        assert!(report.facts.skipped.is_empty(), "{report:?}");
        // A pair (an ended version and its successor) at every 20th fact but the last:
        // 99 ended versions.
        assert_eq!(store.valid_count().unwrap(), 2_000 - 99);
    }
}
