//! Heap held by a store of 200 typical dispatch facts (the seed's 20-task session),
//! measured with a counting global allocator. Run with
//! `cargo bench -p fact-store --bench memory`; it exits non-zero over the 256 KiB budget.

#![allow(unsafe_code, clippy::unwrap_used, clippy::print_stdout)]

#[path = "support/facts.rs"]
mod facts;
#[path = "support/workload.rs"]
mod workload;

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fact_model::{ManualClock, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

/// Counts the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const BUDGET: usize = 256 * 1024;

fn main() -> ExitCode {
    let workload = workload::generate(400, 0, 42);
    // Everything allocated from here on, and still alive at the end, is held by the store:
    // the facts are moved into it.
    let before = LIVE.load(Ordering::SeqCst);
    let store =
        InMemorySessionFactStore::new(StoreConfig::default(), Arc::new(ManualClock::default()));
    let mut remaining = 200;
    for (n, task) in workload.tasks.iter().enumerate() {
        let at = Timestamp::from_unix_secs(n as i64).unwrap();
        for mut batch in facts::task_batches(task, at) {
            batch.truncate(remaining);
            remaining -= batch.len();
            store.add(batch).unwrap();
        }
        if remaining == 0 {
            break;
        }
    }
    let held = LIVE.load(Ordering::SeqCst) - before;
    let versions = store.export_snapshot().records.len();
    let valid = store.valid_count();
    println!(
        "heap held by a store of {versions} dispatch facts ({valid} valid): {held} bytes \
         ({:.1} KiB, {} bytes per fact); budget {} KiB",
        held as f64 / 1024.0,
        held / versions.max(1),
        BUDGET / 1024
    );
    if versions != 200 || held > BUDGET {
        println!("FAILED: expected 200 facts within {} KiB", BUDGET / 1024);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
