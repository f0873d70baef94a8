//! The byte estimate a [`CacheBudget`] is charged for a scope's search cache, checked
//! against the heap the cache really holds, counted by a global allocator.
//!
//! Its own test binary: the allocator counts every allocation of the process, so nothing
//! else may run beside it.

#![allow(unsafe_code, clippy::unwrap_used, clippy::cast_possible_wrap)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{SessionFactStore, StoreConfig, TermQuery, TermWeighting};
use fact_store_sqlite::{CacheBudget, SqliteFactStore, SqliteOptions};

/// The heap in use, each allocation counted as the chunk glibc's `malloc` gives it: the
/// model the stores' estimates use (`src/heap.rs`).
static LIVE: AtomicIsize = AtomicIsize::new(0);

fn chunk(size: usize) -> isize {
    let bytes = if size == 0 {
        0
    } else if size >= 128 * 1024 {
        (size + 16 + 4095) & !4095
    } else {
        ((size + 8 + 15) & !15).max(32)
    };
    bytes as isize
}

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(chunk(layout.size()), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(chunk(layout.size()), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(chunk(layout.size()), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(chunk(new_size) - chunk(layout.size()), Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[derive(Debug)]
struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, query_terms: usize) -> f64 {
        1.0 / query_terms as f64
    }
    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

/// Fact `n` of a scope: words from a vocabulary of a few thousand, a statement, tasks
/// shared by ten facts each.
fn fact(n: usize) -> SessionFact {
    let word = |k: usize| format!("w{}x{}", (n * 7919 + k * 104_729) % 3000, k % 5);
    SessionFact::builder(
        format!("entity{}", n % 400),
        format!("rel{}", n % 9),
        word(1),
    )
    .tag(Tag::Decision)
    .source(format!("task:{}", n / 10), SourceRole::Implementer)
    .statement(format!("{} said {} and {}", word(2), word(3), word(4)))
    .valid_from(Timestamp::from_unix_secs(1_800_000_000 + n as i64).unwrap())
    .build()
    .unwrap()
}

#[test]
fn the_charged_size_of_a_search_cache_is_the_heap_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    // One byte: each search's cache evicts the other scope's.
    let budget = CacheBudget::new(1);
    let open = |scope: &str| {
        let options = SqliteOptions::default().with_cache_budget(budget.clone());
        SqliteFactStore::open_with(&path, scope, StoreConfig::default(), options, clock.clone())
            .unwrap()
    };
    let (large, small) = (open("large"), open("small"));
    for start in (0..5000).step_by(500) {
        large.add((start..start + 500).map(fact).collect()).unwrap();
    }
    small.add((0..10).map(fact).collect()).unwrap();
    let query = TermQuery::new("w12x1 entity7 said", 10);
    // A search of an evicted scope answers from FTS5 and reloads it in the background:
    // search until the scope's cache is in place, and no reload is running.
    let search = |store: &SqliteFactStore| loop {
        assert!(!store.search(&query, &Overlap).unwrap().is_empty());
        while budget.reloading() > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if store.cache_bytes() > 0 {
            break;
        }
    };
    // Every statement prepared, every lazy structure made, before measuring.
    for _ in 0..2 {
        search(&small);
        search(&large);
    }
    let (live_large, used_large) = (LIVE.load(Ordering::SeqCst), budget.used());
    assert_eq!(used_large, large.cache_bytes());
    search(&small);
    let (live_small, used_small) = (LIVE.load(Ordering::SeqCst), budget.used());
    assert_eq!((large.cache_bytes(), used_small), (0, small.cache_bytes()));
    let measured = live_large - live_small;
    let estimated = used_large as isize - used_small as isize;
    let off = (measured - estimated).abs() as f64 / measured as f64;
    assert!(
        off < 0.02,
        "a cache of 5,000 facts holds {measured} bytes, estimated {estimated} ({:.1}% off)",
        off * 100.0
    );
}
