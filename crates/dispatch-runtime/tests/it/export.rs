//! Export and import across every pair of backends (in memory, SQLite, and PostgreSQL
//! when `FACTMEM_PG_URL` is set; under `CI=true` it must be): a random memory exported
//! from one, imported into an empty scope of the other, exports the same bytes; imported
//! again, it changes nothing.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::conformance::memories::{apply, changes, export_bytes};
use fact_store::{ExportOptions, ExportText};
use proptest::test_runner::{Config, TestRunner};
use tempfile::TempDir;

use super::maintenance::{backends, long_term_store};

#[test]
fn an_export_round_trips_byte_for_byte_between_every_pair_of_backends() {
    let backends = backends();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU32::new(0);
    runner
        .run(&changes(), |changes| {
            let case = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = TempDir::new().unwrap();
            for &from in &backends {
                let clock = Arc::new(ManualClock::new(fact_model::Timestamp::UNIX_EPOCH));
                let name = format!("export-{case}-{from:?}");
                let source = long_term_store(from, dir.path(), &name, clock.clone());
                apply(&changes, source.as_ref(), &clock);
                let bytes = export_bytes(source.as_ref(), &ExportOptions::default());
                for &to in &backends {
                    let name = format!("import-{case}-{from:?}-{to:?}");
                    let target = long_term_store(to, dir.path(), &name, clock.clone());
                    let report = target.import_from(&ExportText::new(bytes.clone())).unwrap();
                    assert!(
                        report.facts.skipped.is_empty(),
                        "{from:?} → {to:?}: {report:?}"
                    );
                    let again = export_bytes(target.as_ref(), &ExportOptions::default());
                    assert_eq!(
                        String::from_utf8(again).unwrap(),
                        String::from_utf8(bytes.clone()).unwrap(),
                        "{from:?} → {to:?}"
                    );
                    let report = target.import_from(&ExportText::new(bytes.clone())).unwrap();
                    assert_eq!(report.facts.imported, 0, "{from:?} → {to:?}: {report:?}");
                    assert_eq!(
                        export_bytes(target.as_ref(), &ExportOptions::default()),
                        bytes,
                        "{from:?} → {to:?}, imported twice"
                    );
                    target.erase().unwrap();
                }
                source.erase().unwrap();
            }
            Ok(())
        })
        .unwrap();
}
