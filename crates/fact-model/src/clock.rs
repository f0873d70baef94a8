//! [`Clock`]: the only way the workspace learns the time.
//!
//! Library code never calls `SystemTime::now`; it asks an injected clock, so tests pin
//! time with a [`ManualClock`]. This file is the one place allowed to read the system
//! time (the xtask tidy test enforces it).

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Timestamp;

/// A source of the current time.
///
/// Object safe and shareable: stores and runtimes hold an `Arc<dyn Clock>`.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::{Clock, ManualClock, SystemClock, Timestamp};
///
/// let clocks: Vec<Arc<dyn Clock>> = vec![Arc::new(SystemClock), Arc::new(ManualClock::default())];
/// assert!(clocks[0].now() > Timestamp::UNIX_EPOCH);
/// assert_eq!(clocks[1].now(), Timestamp::UNIX_EPOCH);
/// ```
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// The operating system's wall clock, truncated to microseconds.
///
/// A system time outside years 0000 to 9999 (a badly set clock) is clamped to the nearest
/// representable instant instead of failing.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let micros = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |m| -m),
        };
        clamp(micros)
    }
}

fn clamp(micros: i64) -> Timestamp {
    Timestamp::from_unix_micros(micros).unwrap_or(if micros < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// A clock that only moves when told to: deterministic time for tests and replays.
///
/// Shared by reference or `Arc`, it can be advanced while a store holds it.
///
/// ```
/// use std::time::Duration;
/// use fact_model::{Clock, ManualClock, Timestamp};
///
/// let clock = ManualClock::new("2026-11-22T03:00:00Z".parse()?);
/// clock.advance(Duration::from_secs(90));
/// assert_eq!(clock.now().to_string(), "2026-11-22T03:01:30Z");
/// # Ok::<(), fact_model::TimestampError>(())
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start`.
    #[must_use]
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            micros: AtomicI64::new(start.unix_micros()),
        }
    }

    /// Moves the clock to `to` (backwards too, to test out-of-order input).
    pub fn set(&self, to: Timestamp) {
        self.micros.store(to.unix_micros(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `by`, stopping at the last representable instant.
    pub fn advance(&self, by: Duration) {
        let next = self.now().checked_add(by).unwrap_or(Timestamp::MAX);
        self.set(next);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        clamp(self.micros.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::default();
        assert_eq!(clock.now(), Timestamp::UNIX_EPOCH);
        clock.advance(Duration::from_micros(7));
        assert_eq!(clock.now().unix_micros(), 7);
        clock.set(Timestamp::MAX);
        clock.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), Timestamp::MAX);
    }

    #[test]
    fn system_clock_is_after_2020() {
        let floor = Timestamp::from_unix_secs(1_577_836_800).unwrap();
        assert!(SystemClock.now() > floor);
    }
}
