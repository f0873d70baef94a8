//! The tenants of `facts mcp --http --tokens FILE`: the token file, what each token may do,
//! and each tenant's request limits.
//!
//! The file (JSON, `docs/tenants.md`) lists tenants; each has a name, the SHA-256 of one or
//! more bearer tokens (never a token in clear), a scope, rights (`read`, `write`,
//! `runtime`), an optional project directory and optional limits. [`Tenants::parse`]
//! validates the whole file before anything is served, and refuses it whole with a message
//! naming the entry at fault: a digest that is not 64 hex digits, a digest two entries
//! share, an unknown right, a scope that is empty, and two tenants whose scopes
//! [overlap].
//!
//! A presented token is hashed and its digest looked up. The comparison is of SHA-256
//! digests, not of tokens: a client that times the lookup learns how many leading bytes of
//! the digest of its guess match a stored digest, and without a preimage attack on SHA-256
//! that says nothing about the token to guess next, so the lookup needs no constant-time
//! comparison.
//!
//! Each tenant has a token bucket (requests per second, with a burst) and a count of
//! requests in flight: [`TokenBucket`] takes the time as an argument, so its tests choose
//! it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

/// A SHA-256 digest.
pub(crate) type Sha = [u8; 32];

/// Requests a tenant may have in flight at once, unless its entry or the file's `defaults`
/// say otherwise.
pub(crate) const DEFAULT_MAX_CONCURRENT: usize = 16;
/// Requests per second a tenant may make on average, unless its entry or the file's
/// `defaults` say otherwise.
pub(crate) const DEFAULT_RATE_PER_SEC: f64 = 50.0;
/// Requests a tenant may make at once after being idle, unless its entry or the file's
/// `defaults` say otherwise.
pub(crate) const DEFAULT_BURST: f64 = 100.0;
/// The longest scope, in bytes.
const MAX_SCOPE_BYTES: usize = 200;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Right {
    /// The tools that only read: memory reads and the protocol's queries.
    Read,
    /// The memory tools that change memory.
    Write,
    /// The protocol's actions that drive runs (`init_run`, `compile_prompt`, …).
    Runtime,
    /// Reading `/metrics` (`facts mcp --metrics`): every tenant's counts, so an operator's.
    Metrics,
}

impl Right {
    /// The right's name in the token file.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Write => "write",
            Right::Runtime => "runtime",
            Right::Metrics => "metrics",
        }
    }

    fn parse(name: &str) -> Option<Right> {
        [Right::Read, Right::Write, Right::Runtime, Right::Metrics]
            .into_iter()
            .find(|right| right.name() == name)
    }
}

/// Whether two tenants' scopes overlap: they are equal, or one is a prefix of the other at
/// a boundary, that is, the longer one continues with `/` or `:` right after the shorter
/// one, or the shorter one ends with `/` or `:`. `acme` overlaps `acme`, `acme/bob` and
/// `acme:x`, and `acme/` overlaps `acme/bob`; `acme` does not overlap `acme2` or `bob`.
///
/// A tenant owns its scope `S` and the spec scopes `S/spec:NAME`; two tenants whose scopes
/// do not overlap own no scope in common (the property test checks it).
pub(crate) fn overlap(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    match long.strip_prefix(short) {
        None => false,
        Some("") => true,
        Some(rest) => rest.starts_with(['/', ':']) || short.ends_with(['/', ':']),
    }
}

/// The prefix of a tenant's spec scopes, `SCOPE/`: its spec `NAME` is kept under
/// `SCOPE/spec:NAME`.
pub(crate) fn spec_prefix(scope: &str) -> String {
    format!("{scope}/")
}

/// A request-rate limit: `rate` tokens a second, at most `burst` saved up; a request takes
/// one. Times are durations since any fixed instant, given by the caller.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Duration,
}

impl TokenBucket {
    /// A full bucket at time `now`. `rate` and `burst` were checked positive and finite.
    pub(crate) fn new(rate: f64, burst: f64, now: Duration) -> TokenBucket {
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes a token at time `now`, or says how long until one is there. A time earlier
    /// than the last one seen counts as the last one.
    pub(crate) fn take(&mut self, now: Duration) -> Result<(), Duration> {
        let elapsed = now.saturating_sub(self.last);
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - self.tokens) / self.rate;
        Err(Duration::try_from_secs_f64(wait).unwrap_or(Duration::from_secs(1)))
    }
}

/// One tenant of the token file, with its limits' state.
#[derive(Debug)]
pub(crate) struct Tenant {
    name: String,
    scope: String,
    rights: HashSet<Right>,
    /// The canonical directory `project_path` must lie in; `None`: the server's.
    project: Option<PathBuf>,
    /// Requests in flight.
    concurrent: Arc<Semaphore>,
    max_concurrent: usize,
    bucket: Mutex<TokenBucket>,
}

impl Tenant {
    /// The tenant's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The scope of its memory, and the prefix of its spec scopes.
    pub(crate) fn scope(&self) -> &str {
        &self.scope
    }

    /// Whether its tokens carry `right`.
    pub(crate) fn may(&self, right: Right) -> bool {
        self.rights.contains(&right)
    }

    /// The canonical project directory of its entry, if it names one.
    pub(crate) fn project(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    /// Takes a request token at time `now`, or says how long to wait.
    pub(crate) fn admit(&self, now: Duration) -> Result<(), Duration> {
        self.bucket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(now)
    }

    /// A place among its requests in flight, or `None` when they are all taken.
    pub(crate) fn enter(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.concurrent.clone().try_acquire_owned().ok()
    }

    /// How many requests it may have in flight.
    pub(crate) fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }
}

/// The token file's tenants, by the digests of their tokens.
#[derive(Debug, Default)]
pub(crate) struct Tenants {
    by_digest: HashMap<Sha, Arc<Tenant>>,
    count: usize,
}

/// The token file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Limits,
    tenants: Vec<Entry>,
}

/// One tenant as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    tenant: String,
    sha256: Digests,
    #[serde(default)]
    scope: Option<String>,
    rights: Vec<String>,
    #[serde(default)]
    project: Option<PathBuf>,
    #[serde(flatten)]
    limits: Limits,
}

/// One digest or several (a token being replaced, and its successor).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Digests {
    One(String),
    Many(Vec<String>),
}

/// Limits as written; what is missing comes from the defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    max_concurrent: Option<usize>,
    rate_per_sec: Option<f64>,
    burst: Option<f64>,
}

impl Tenants {
    /// Reads and validates the token file at `path`.
    pub(crate) fn load(path: &Path, now: Duration) -> Result<Tenants, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--tokens {}: {e}", path.display()))?;
        Tenants::parse(&text, now).map_err(|e| format!("--tokens {}: {e}", path.display()))
    }

    /// Validates a token file's text; `now` starts the tenants' token buckets.
    pub(crate) fn parse(text: &str, now: Duration) -> Result<Tenants, String> {
        let file: File =
            serde_json::from_str(text).map_err(|e| format!("not a token file: {e}"))?;
        let mut tenants = Tenants::default();
        let mut names = HashSet::new();
        let mut scopes: Vec<(String, String)> = Vec::new();
        for (index, entry) in file.tenants.into_iter().enumerate() {
            let at = format!("tenant {:?} (entry {})", entry.tenant, index + 1);
            if entry.tenant.trim().is_empty() {
                return Err(format!("entry {}: the tenant name is empty", index + 1));
            }
            if !names.insert(entry.tenant.clone()) {
                return Err(format!("{at}: another entry has the same tenant name"));
            }
            let scope = entry.scope.clone().unwrap_or_else(|| entry.tenant.clone());
            check_scope(&scope).map_err(|e| format!("{at}: scope {scope:?} {e}"))?;
            if let Some((other, _)) = scopes.iter().find(|(_, s)| overlap(s, &scope)) {
                return Err(format!(
                    "{at}: its scope {scope:?} overlaps tenant {other:?}'s: two tenants' \
                     scopes must differ and neither may be the other's prefix at a '/' or ':'"
                ));
            }
            scopes.push((entry.tenant.clone(), scope.clone()));
            let mut rights = HashSet::new();
            for right in &entry.rights {
                let parsed = Right::parse(right).ok_or_else(|| {
                    format!("{at}: unknown right {right:?}; the rights are read, write, runtime, metrics")
                })?;
                rights.insert(parsed);
            }
            let project = match &entry.project {
                None => None,
                Some(dir) => Some(
                    std::fs::canonicalize(dir)
                        .ok()
                        .filter(|d| d.is_dir())
                        .ok_or_else(|| {
                            format!("{at}: project {} is not a directory", dir.display())
                        })?,
                ),
            };
            let limit = |own: Option<f64>, default: Option<f64>, fallback: f64| {
                own.or(default).unwrap_or(fallback)
            };
            let rate = limit(
                entry.limits.rate_per_sec,
                file.defaults.rate_per_sec,
                DEFAULT_RATE_PER_SEC,
            );
            let burst = limit(entry.limits.burst, file.defaults.burst, DEFAULT_BURST);
            if !(rate.is_finite() && rate > 0.0) {
                return Err(format!("{at}: rate_per_sec must be a positive number"));
            }
            if !(burst.is_finite() && burst >= 1.0) {
                return Err(format!("{at}: burst must be a number of at least 1"));
            }
            let max_concurrent = entry
                .limits
                .max_concurrent
                .or(file.defaults.max_concurrent)
                .unwrap_or(DEFAULT_MAX_CONCURRENT);
            if max_concurrent == 0 || max_concurrent > Semaphore::MAX_PERMITS {
                return Err(format!("{at}: max_concurrent must be at least 1"));
            }
            let tenant = Arc::new(Tenant {
                name: entry.tenant.clone(),
                scope,
                rights,
                project,
                concurrent: Arc::new(Semaphore::new(max_concurrent)),
                max_concurrent,
                bucket: Mutex::new(TokenBucket::new(rate, burst, now)),
            });
            let digests = match entry.sha256 {
                Digests::One(one) => vec![one],
                Digests::Many(many) => many,
            };
            if digests.is_empty() {
                return Err(format!("{at}: sha256 lists no digest"));
            }
            for hex in digests {
                let digest = parse_digest(&hex).ok_or_else(|| {
                    format!(
                        "{at}: sha256 {:?} is not 64 hex digits (the SHA-256 of the token: \
                         printf %s \"$TOKEN\" | sha256sum)",
                        crate::bounds::clip(&hex, 80)
                    )
                })?;
                if tenants.by_digest.insert(digest, tenant.clone()).is_some() {
                    return Err(format!(
                        "{at}: sha256 {hex} is another entry's too: each token belongs to one \
                         tenant"
                    ));
                }
            }
            tenants.count += 1;
        }
        Ok(tenants)
    }

    /// The tenant whose token is `token`.
    pub(crate) fn find(&self, token: &str) -> Option<(&Arc<Tenant>, Sha)> {
        let digest = sha256(token);
        self.by_digest.get(&digest).map(|tenant| (tenant, digest))
    }

    /// How many tenants there are.
    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

/// The SHA-256 of `token`.
pub(crate) fn sha256(token: &str) -> Sha {
    Sha256::digest(token.as_bytes()).into()
}

/// 64 hex digits (either case) as a digest.
fn parse_digest(hex: &str) -> Option<Sha> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(bytes.chunks_exact(2)) {
        let [high, low] = pair else { return None };
        let nibble = |c: u8| {
            char::from(c)
                .to_digit(16)
                .and_then(|d| u8::try_from(d).ok())
        };
        *byte = nibble(*high)? << 4 | nibble(*low)?;
    }
    Some(digest)
}

/// Whether `scope` can be a tenant's scope: not empty, not padded, no control characters,
/// at most 200 bytes.
fn check_scope(scope: &str) -> Result<(), &'static str> {
    if scope.trim().is_empty() {
        Err("is empty")
    } else if scope.trim() != scope {
        Err("starts or ends with white space")
    } else if scope.chars().any(char::is_control) {
        Err("holds a control character")
    } else if scope.len() > MAX_SCOPE_BYTES {
        Err("is longer than 200 bytes")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn hex(token: &str) -> String {
        sha256(token).iter().map(|b| format!("{b:02x}")).collect()
    }

    fn check(file: serde_json::Value, expect: Result<usize, &str>) {
        match (Tenants::parse(&file.to_string(), Duration::ZERO), expect) {
            (Ok(tenants), Ok(count)) => assert_eq!(tenants.len(), count, "{file}"),
            (Err(error), Err(part)) => assert!(error.contains(part), "{error}"),
            (got, expect) => panic!("{file}: got {got:?}, expected {expect:?}"),
        }
    }

    fn entry(name: &str, scope: &str, rights: &[&str]) -> serde_json::Value {
        json!({"tenant": name, "sha256": hex(name), "scope": scope, "rights": rights})
    }

    #[test]
    fn a_token_file_is_checked_whole() {
        check(
            json!({"tenants": [entry("a", "a", &["read"]), entry("b", "b", &["write"])]}),
            Ok(2),
        );
        check(json!({"tenants": []}), Ok(0));
        check(
            json!({"tenants": [entry("a", "x", &["read", "fly"])]}),
            Err("unknown right \"fly\""),
        );
        check(
            json!({"tenants": [entry("a", "x", &[]), entry("b", "x/y", &[])]}),
            Err("overlaps tenant \"a\""),
        );
        check(
            json!({"tenants": [entry("a", "x", &[]), entry("b", "x", &[])]}),
            Err("overlaps"),
        );
        check(
            json!({"tenants": [entry("a", "x", &[]), entry("a", "y", &[])]}),
            Err("same tenant name"),
        );
        check(json!({"tenants": [entry("a", " ", &[])]}), Err("is empty"));
        check(
            json!({"tenants": [{"tenant": "a", "sha256": "abc", "rights": []}]}),
            Err("tenant \"a\" (entry 1): sha256 \"abc\" is not 64 hex digits"),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": "z".repeat(64), "rights": []}]}),
            Err("not 64 hex digits"),
        );
        check(
            json!({"tenants": [entry("a", "x", &[]), {"tenant": "b", "sha256": hex("a"), "rights": []}]}),
            Err("another entry's too"),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": [hex("1"), hex("2")], "rights": ["read"], "max_concurrent": 2}]}),
            Ok(1),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": hex("1"), "rights": [], "rate_per_sec": 0}]}),
            Err("rate_per_sec"),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": hex("1"), "rights": [], "max_concurrent": 0}]}),
            Err("max_concurrent"),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": hex("1"), "rights": [], "rigths": []}]}),
            Err("not a token file"),
        );
        check(
            json!({"tenants": [{"tenant": "a", "sha256": hex("1"), "rights": [], "project": "/no/such/dir"}]}),
            Err("not a directory"),
        );
    }

    #[test]
    fn a_token_is_found_by_its_digest_and_carries_its_rights() {
        let file = json!({"defaults": {"max_concurrent": 3},
                          "tenants": [entry("alice", "team/alice", &["read", "runtime"])]});
        let tenants = Tenants::parse(&file.to_string(), Duration::ZERO).unwrap();
        let (alice, digest) = tenants.find("alice").unwrap();
        assert_eq!(digest, sha256("alice"));
        assert_eq!(alice.name(), "alice");
        assert_eq!(alice.scope(), "team/alice");
        assert!(alice.may(Right::Read) && alice.may(Right::Runtime) && !alice.may(Right::Write));
        assert_eq!(alice.max_concurrent(), 3);
        assert!(tenants.find("bob").is_none());
        assert!(tenants.find("ALICE").is_none());
        // Upper-case hex is the same digest.
        let upper =
            json!({"tenants": [{"tenant": "a", "sha256": hex("t").to_uppercase(), "rights": []}]});
        assert!(
            Tenants::parse(&upper.to_string(), Duration::ZERO)
                .unwrap()
                .find("t")
                .is_some()
        );
    }

    #[test]
    fn scopes_overlap_when_equal_or_a_prefix_at_a_boundary() {
        for (a, b) in [
            ("acme", "acme"),
            ("acme", "acme/bob"),
            ("acme", "acme:x"),
            ("acme/", "acme/bob"),
            ("a:", "a:b"),
        ] {
            assert!(overlap(a, b) && overlap(b, a), "{a} {b}");
        }
        for (a, b) in [
            ("acme", "acme2"),
            ("acme", "bob"),
            ("acme/bob", "acme/bobby"),
            ("a", "ba"),
        ] {
            assert!(!overlap(a, b) && !overlap(b, a), "{a} {b}");
        }
    }

    #[test]
    fn a_bucket_gives_its_burst_then_its_rate() {
        let mut bucket = TokenBucket::new(2.0, 3.0, Duration::ZERO);
        for _ in 0..3 {
            assert!(bucket.take(Duration::ZERO).is_ok());
        }
        let wait = bucket.take(Duration::ZERO).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(bucket.take(Duration::from_millis(499)).is_err());
        assert!(bucket.take(Duration::from_millis(500)).is_ok());
        // A clock that goes back counts as the last time seen.
        assert!(bucket.take(Duration::ZERO).is_err());
        // Idle for long: no more than the burst saved up.
        let later = Duration::from_secs(3600);
        let taken = (0..10).filter(|_| bucket.take(later).is_ok()).count();
        assert_eq!(taken, 3);
    }

    /// Scopes and spec names over a small alphabet, so prefixes and boundaries are common.
    fn name() -> impl Strategy<Value = String> {
        "[abspec/:]{1,8}"
    }

    proptest! {
        #[test]
        fn tenants_whose_scopes_do_not_overlap_own_no_scope_in_common(
            a in name(), b in name(), x in "[ab:]{1,4}", y in "[ab:]{1,4}",
        ) {
            prop_assert_eq!(overlap(&a, &b), overlap(&b, &a));
            prop_assert!(overlap(&a, &a));
            if !overlap(&a, &b) {
                let spec = |scope: &str, name: &str| format!("{}spec:{name}", spec_prefix(scope));
                prop_assert_ne!(&a, &b);
                prop_assert_ne!(&a, &spec(&b, &y));
                prop_assert_ne!(&spec(&a, &x), &b);
                prop_assert_ne!(spec(&a, &x), spec(&b, &y));
            }
        }

        #[test]
        fn a_bucket_never_lets_more_than_burst_plus_rate_times_time(
            rate in 0.5f64..50.0, burst in 1.0f64..20.0,
            steps in proptest::collection::vec(0u64..200, 1..200),
        ) {
            let mut bucket = TokenBucket::new(rate, burst, Duration::ZERO);
            let mut now = Duration::ZERO;
            let mut taken = 0u32;
            for step in steps {
                now += Duration::from_millis(step);
                match bucket.take(now) {
                    Ok(()) => taken += 1,
                    // Waiting as long as it says is enough.
                    Err(wait) => prop_assert!(bucket.clone().take(now + wait + Duration::from_micros(1)).is_ok()),
                }
            }
            prop_assert!(f64::from(taken) <= burst + rate * now.as_secs_f64() + 1e-9);
        }
    }
}
