//! `fact-store-crash-writer DB NAME BATCHES`: the writer process of the crash tests
//! (`tests/it/crash.rs`), not a test itself. Opens the SQLite store at `DB` (scope `crash`,
//! unbounded), adds `BATCHES` batches of [`BATCH`] facts named after `NAME`, and prints
//! `committed N` on stdout after each commit, so the test knows what a kill may not lose.
//!
//! Its batches are those of `batches.rs` beside it, which the test compiles too, so both
//! sides agree on every fact.

use std::io::Write;
use std::sync::Arc;

use fact_model::SystemClock;
use fact_store::SessionFactStore;
use fact_store_sqlite::SqliteFactStore;

mod batches;

use batches::{BATCH, batch, unbounded};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(db), Some(name), Some(batches)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: fact-store-crash-writer DB NAME BATCHES".into());
    };
    let batches: usize = batches.parse()?;
    let store = SqliteFactStore::open(&db, "crash", unbounded(), Arc::new(SystemClock))?;
    let mut stdout = std::io::stdout().lock();
    for n in 0..batches {
        let facts = batch(&name, n)?;
        debug_assert_eq!(facts.len(), BATCH);
        store.add(facts)?;
        writeln!(stdout, "committed {n}")?;
        stdout.flush()?;
    }
    Ok(())
}
