//! What an allocation costs the process: the model of the heap behind every cache's byte
//! estimate ([`crate::CacheBudget`]).
//!
//! A cache counts the allocations it owns by their capacity (not their length), each as
//! the chunk glibc's `malloc` gives it on a 64-bit system: the size plus an 8-byte header,
//! rounded up to 16 bytes, at least 32 bytes; an allocation of 128 KiB or more is mapped
//! whole pages. A `HashMap` is counted as hashbrown lays it out (its slots, one control
//! byte per bucket and a trailing group). Other allocators differ by a few bytes per
//! allocation; the budget is an estimate of what a cache holds, tested against a counting
//! allocator (`fact-store-sqlite`'s `tests/cache_size.rs`).

use std::mem::{align_of, size_of};

/// Where glibc starts mapping an allocation of its own (its initial threshold).
const MMAP_THRESHOLD: usize = 128 * 1024;

/// The bytes an allocation of `size` bytes takes from the heap (0 for none).
pub fn chunk(size: usize) -> usize {
    if size == 0 {
        0
    } else if size >= MMAP_THRESHOLD {
        size.saturating_add(16 + 4095) & !4095
    } else {
        (size.saturating_add(8 + 15) & !15).max(32)
    }
}

/// The heap of a `Vec<T>` of `capacity`.
pub(crate) fn vec_bytes<T>(capacity: usize) -> usize {
    chunk(capacity.saturating_mul(size_of::<T>()))
}

/// The heap of a `HashMap<K, V>` whose `capacity()` is `capacity` (keys' and values' own
/// allocations not included).
pub fn map_bytes<K, V>(capacity: usize) -> usize {
    // hashbrown's buckets, from the capacity it reports: a power of two, with 1/8 of it
    // kept free from 8 buckets on.
    let buckets = match capacity {
        0 => return 0,
        1..=7 => capacity + 1,
        _ => capacity / 7 * 8,
    };
    const GROUP: usize = 16;
    let slot = size_of::<(K, V)>();
    let align = align_of::<(K, V)>().max(GROUP);
    let ctrl_offset = slot.saturating_mul(buckets).saturating_add(align - 1) & !(align - 1);
    chunk(ctrl_offset.saturating_add(buckets).saturating_add(GROUP))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use super::{chunk, map_bytes, vec_bytes};

    #[test]
    fn chunks_follow_glibc() {
        assert_eq!(chunk(0), 0);
        assert_eq!(chunk(1), 32);
        assert_eq!(chunk(24), 32);
        assert_eq!(chunk(25), 48);
        assert_eq!(chunk(1000), 1008);
        assert_eq!(chunk(200_000), 200_704);
        assert_eq!(vec_bytes::<u64>(3), 32);
    }

    #[test]
    fn maps_are_counted_from_the_capacity_they_report() {
        let mut map: HashMap<u64, u32> = HashMap::new();
        assert_eq!(map_bytes::<u64, u32>(map.capacity()), 0);
        map.insert(1, 1);
        // 4 buckets of 16 bytes, 4 control bytes and a group of 16.
        assert_eq!(map_bytes::<u64, u32>(map.capacity()), chunk(64 + 4 + 16));
        for n in 0..1000 {
            map.insert(n, 0);
        }
        // 2048 buckets.
        assert_eq!(
            map_bytes::<u64, u32>(map.capacity()),
            chunk(2048 * 16 + 2048 + 16)
        );
    }
}
