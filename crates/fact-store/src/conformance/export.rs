//! Export and import ([`LongTermStore::export_to`], [`LongTermStore::import_from`]): an
//! export imported into an empty scope exports the same bytes, a file imported twice
//! changes nothing, a bad file imports nothing, an import into a scope with memory merges,
//! and `as_of` exports the memory as it was.
//!
//! The memories are [`memories`](super::memories)'.

use std::time::Duration;

use fact_model::ManualClock;

use super::fixture::{Fixture, long_term, t};
use super::memories::{Change, OBJECTS, apply, export_bytes};
use crate::{ExportOptions, ExportText, LongTermStore, StoreError};

/// A memory of every kind of record: facts of three batches (one ended by a newer
/// version, one invalidated, one with metadata), two episodes, an alias and two versions
/// of a profile field.
fn rich(store: &dyn LongTermStore, clock: &ManualClock) {
    apply(
        &[
            Change::Add(vec![(0, 0, 1, false), (1, 1, 3, true)]),
            Change::Episode(2),
            Change::Add(vec![(0, 0, 0, false), (2, 2, 2, false)]),
            Change::Invalidate(2, 2),
            Change::Alias(0, 1),
            Change::Profile(0, 0),
            Change::Episode(3),
            Change::Profile(0, 4),
        ],
        store,
        clock,
    );
}

/// An export imported into an empty scope of the same backend exports the same bytes,
/// and holds every record of every kind.
pub fn an_export_imported_into_an_empty_scope_exports_the_same_bytes(fixture: &dyn Fixture) {
    let (Some((store, clock)), Some((copy, _))) = (long_term(fixture), long_term(fixture)) else {
        return;
    };
    rich(store.as_ref(), &clock);
    let bytes = export_bytes(store.as_ref(), &ExportOptions::default());
    let text = String::from_utf8(bytes.clone()).unwrap();
    for kind in ["header", "fact", "episode", "alias", "profile", "end"] {
        assert!(
            text.contains(&format!("{{\"type\":\"{kind}\"")),
            "no {kind} line in\n{text}"
        );
    }
    let report = copy.import_from(&ExportText::new(bytes.clone())).unwrap();
    let versions = store.export_snapshot().unwrap().records.len();
    assert_eq!(report.facts.imported, versions, "{report:?}");
    assert_eq!(
        (report.episodes, report.aliases, report.profile_versions),
        (2, 1, 2)
    );
    assert!(report.facts.skipped.is_empty(), "{report:?}");
    assert_eq!(
        String::from_utf8(export_bytes(copy.as_ref(), &ExportOptions::default())).unwrap(),
        text
    );
    assert_eq!(copy.valid_facts().unwrap(), store.valid_facts().unwrap());
    assert_eq!(copy.episodes().unwrap(), store.episodes().unwrap());
}

/// Importing a file into the scope that holds it already changes nothing: every record
/// is counted unchanged, and the export is the same bytes.
pub fn importing_a_file_twice_changes_nothing(fixture: &dyn Fixture) {
    let Some((store, clock)) = long_term(fixture) else {
        return;
    };
    rich(store.as_ref(), &clock);
    let bytes = export_bytes(store.as_ref(), &ExportOptions::default());
    let records = bytes.iter().filter(|&&b| b == b'\n').count() - 2;
    for _ in 0..2 {
        let report = store.import_from(&ExportText::new(bytes.clone())).unwrap();
        assert_eq!(report.unchanged, records, "{report:?}");
        assert_eq!(report.facts.imported, 0, "{report:?}");
        assert_eq!(
            export_bytes(store.as_ref(), &ExportOptions::default()),
            bytes
        );
    }
    // New facts after the re-import still take newer batches than the imported ones.
    clock.advance(Duration::from_secs(60));
    apply(
        &[Change::Add(vec![(0, 0, 2, false)])],
        store.as_ref(),
        &clock,
    );
    let valid = store.valid_about("user", 10).unwrap();
    assert!(valid.iter().any(|f| f.object() == OBJECTS[2]), "{valid:?}");
}

/// A file with a line that is not a record, cut short, changed after it was written, of
/// another format or of a newer version imports nothing; the error names the line.
pub fn a_bad_file_imports_nothing_and_names_its_line(fixture: &dyn Fixture) {
    let (Some((store, clock)), Some((target, target_clock))) =
        (long_term(fixture), long_term(fixture))
    else {
        return;
    };
    rich(store.as_ref(), &clock);
    apply(
        &[Change::Add(vec![(0, 1, 0, false)]), Change::Profile(1, 1)],
        target.as_ref(),
        &target_clock,
    );
    let before = export_bytes(target.as_ref(), &ExportOptions::default());
    let good = String::from_utf8(export_bytes(store.as_ref(), &ExportOptions::default())).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let last = lines.len();
    let with_line = |n: usize, text: &str| {
        let mut lines = lines.clone();
        if let Some(line) = lines.get_mut(n - 1) {
            *line = text;
        }
        lines.join("\n") + "\n"
    };
    let cut = lines.get(..last - 1).unwrap().join("\n") + "\n";
    let changed = good.replacen("a chat", "a chap", 1);
    let cases: Vec<(String, u64, &str)> = vec![
        (
            with_line(3, "{\"type\":\"fact\",\"batch\":1}"),
            3,
            "not a valid record",
        ),
        (
            with_line(last - 1, "not json"),
            (last - 1) as u64,
            "not a valid record",
        ),
        (cut, (last - 1) as u64, "cut short"),
        (changed, last as u64, "digest"),
        (
            "{\"version\":1,\"records\":[]}\n".to_owned(),
            1,
            "not a factmem-export file",
        ),
    ];
    for (file, line, words) in cases {
        match target.import_from(&ExportText::new(file.into_bytes())) {
            Err(StoreError::Export { line: at, message }) => {
                assert_eq!(at, line, "{message}");
                assert!(message.contains(words), "{message}");
            }
            other => panic!("expected an export error at line {line}, got {other:?}"),
        }
        assert_eq!(
            export_bytes(target.as_ref(), &ExportOptions::default()),
            before
        );
    }
    let newer = good.replacen("\"version\":1", "\"version\":99", 1);
    assert!(matches!(
        target.import_from(&ExportText::new(newer.into_bytes())),
        Err(StoreError::ExportVersion { found: 99, .. })
    ));
    assert_eq!(
        export_bytes(target.as_ref(), &ExportOptions::default()),
        before
    );
}

/// An alias of the file that the scope's aliases make a cycle of refuses the whole file,
/// naming its line; nothing of the file is imported.
pub fn an_alias_cycle_with_the_scope_refuses_the_file_naming_its_line(fixture: &dyn Fixture) {
    let (Some((store, clock)), Some((target, target_clock))) =
        (long_term(fixture), long_term(fixture))
    else {
        return;
    };
    // The file: a fact, then the alias melanie-1 → user (line 3, after the header and
    // the fact).
    apply(
        &[Change::Add(vec![(0, 0, 0, false)]), Change::Alias(1, 0)],
        store.as_ref(),
        &clock,
    );
    let file = export_bytes(store.as_ref(), &ExportOptions::default());
    // The scope: user → melanie-1, so the file's alias would close a cycle.
    let mut write = crate::MemoryWrite::default();
    write.aliases.push(crate::AliasChange::Set {
        alias: "user".into(),
        entity: "melanie-1".into(),
        at: t(1),
    });
    target.commit(write).unwrap();
    apply(&[Change::Profile(1, 1)], target.as_ref(), &target_clock);
    let before = export_bytes(target.as_ref(), &ExportOptions::default());
    match target.import_from(&ExportText::new(file)) {
        Err(StoreError::Export { line, message }) => {
            assert_eq!(line, 3, "{message}");
            assert!(message.contains("cycle"), "{message}");
        }
        other => panic!("expected the alias's line refused, got {other:?}"),
    }
    assert_eq!(
        export_bytes(target.as_ref(), &ExportOptions::default()),
        before
    );
}

/// An import into a scope that holds memory merges: the file's valid facts supersede the
/// scope's of the same subject and relation (its batches count as newer), the scope's
/// other facts stay, and profile versions are added after the scope's own.
pub fn an_import_into_a_scope_with_memory_merges(fixture: &dyn Fixture) {
    let (Some((store, clock)), Some((target, target_clock))) =
        (long_term(fixture), long_term(fixture))
    else {
        return;
    };
    // The file: the user prefers pytest (said at t(1)).
    apply(
        &[Change::Add(vec![(0, 0, 0, false)])],
        store.as_ref(),
        &clock,
    );
    apply(&[Change::Profile(0, 0)], store.as_ref(), &clock);
    let bytes = export_bytes(store.as_ref(), &ExportOptions::default());
    // The scope: the user prefers unittest and lives in Zürich, said later (t(100)).
    target_clock.set(t(100));
    apply(
        &[
            Change::Add(vec![(0, 0, 1, false), (0, 1, 3, false)]),
            Change::Profile(0, 1),
        ],
        target.as_ref(),
        &target_clock,
    );
    let report = target.import_from(&ExportText::new(bytes)).unwrap();
    assert_eq!(report.facts.imported, 1, "{report:?}");
    assert_eq!(report.profile_versions, 1);
    let mut valid: Vec<String> = target
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect();
    valid.sort();
    assert_eq!(
        valid,
        ["user lives_in Zürich 東京 🚲", "user prefers pytest"]
    );
    let history = target.profile_history().unwrap();
    assert_eq!(
        history.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        ["unittest", "pytest"]
    );
}

/// `as_of` exports the memory as it was: what was valid then (a version that ended later
/// as still valid), not what came after; the episodes, aliases and profile versions of
/// then.
pub fn as_of_exports_the_memory_as_it_was(fixture: &dyn Fixture) {
    let (Some((store, clock)), Some((then, _))) = (long_term(fixture), long_term(fixture)) else {
        return;
    };
    rich(store.as_ref(), &clock);
    // `rich` moves the clock a second before each change: the second batch came at t(3).
    let options = ExportOptions::default().with_as_of(t(2));
    let bytes = export_bytes(store.as_ref(), &options);
    then.import_from(&ExportText::new(bytes)).unwrap();
    let mut lines: Vec<String> = then
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        ["melanie lives_in Zürich 東京 🚲", "user prefers unittest"]
    );
    assert_eq!(then.episodes().unwrap().len(), 1);
    assert!(then.aliases().unwrap().is_empty());
    assert!(then.profile_history().unwrap().is_empty());
    let valid_then: Vec<_> = store.valid_at(t(2)).unwrap();
    assert_eq!(valid_then.len(), 2);
}
