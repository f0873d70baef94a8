//! What the cold-start benchmarks share: a deterministic generator of memory-like facts,
//! the queries asked of them, and the timing of one `facts mem` process.
//!
//! The facts: 20,000 made-up words ranked by a Zipf law (a few very common, a long tail),
//! subjects from 5,000 entities of which `user` is the most common (about one fact in
//! ten), relations `verb_noun_noun` (12 verbs), objects of one to three words, statements
//! of the subject, the relation's words, the object and two to six more words. The same
//! seed gives the same facts, so a database is built once and measured in every run.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

use dispatch_runtime::reexports::{SessionFact, SessionFactStore, SourceRole, Tag, Timestamp};

/// The sizes measured: valid facts in the scope.
pub(crate) const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

/// The scope the facts are in; the generator's version is part of it, so a database built
/// by another version is never measured as this one.
pub(crate) fn scope(size: usize) -> String {
    format!("cold:v1:{size}")
}

/// xorshift64*: deterministic, good enough to pick words.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Ranks drawn with probability proportional to `1 / rank`.
pub(crate) struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub(crate) fn new(n: usize) -> Self {
        let mut total = 0.0;
        let cumulative = (1..=n)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Zipf { cumulative }
    }

    pub(crate) fn sample(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let wanted = rng.unit() * total;
        self.cumulative
            .partition_point(|&c| c < wanted)
            .min(self.cumulative.len() - 1)
    }
}

const SYLLABLES: [&str; 40] = [
    "ka", "lo", "mi", "ve", "ra", "no", "tu", "se", "fi", "da", "po", "ne", "gu", "ri", "sa", "te",
    "bo", "li", "me", "zu", "ha", "yo", "ki", "ru", "wa", "de", "ni", "so", "pe", "la", "mo", "fu",
    "ge", "ta", "vi", "ko", "nu", "be", "ja", "ce",
];

const VERBS: [&str; 12] = [
    "prefers", "owns", "likes", "visited", "uses", "plans", "knows", "bought", "studies", "avoids",
    "builds", "reads",
];

/// The generator: its vocabulary and word ranks.
pub(crate) struct Generator {
    words: Vec<String>,
    entities: Vec<String>,
    word_rank: Zipf,
    entity_rank: Zipf,
    rng: Rng,
    at: i64,
}

impl Generator {
    pub(crate) fn new(seed: u64) -> Self {
        let mut words = Vec::new();
        'outer: for a in SYLLABLES {
            for b in SYLLABLES {
                for c in SYLLABLES {
                    words.push(format!("{a}{b}{c}"));
                    if words.len() == 20_000 {
                        break 'outer;
                    }
                }
            }
        }
        // Spread the syllable order over the ranks.
        let mut rng = Rng::new(seed);
        for i in (1..words.len()).rev() {
            let j = rng.below(i + 1);
            words.swap(i, j);
        }
        let mut entities: Vec<String> = words.iter().take(4_999).map(|w| format!("{w}n")).collect();
        entities.insert(0, "user".to_owned());
        Generator {
            word_rank: Zipf::new(words.len()),
            entity_rank: Zipf::new(entities.len()),
            words,
            entities,
            rng,
            at: 1_800_000_000,
        }
    }

    fn word(&mut self) -> &str {
        let rank = self.word_rank.sample(&mut self.rng);
        &self.words[rank]
    }

    fn words(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| self.word().to_owned()).collect()
    }

    /// The next fact.
    pub(crate) fn fact(&mut self) -> SessionFact {
        let subject = self.entities[self.entity_rank.sample(&mut self.rng)].clone();
        let verb = VERBS[self.rng.below(VERBS.len())];
        let nouns = self.words(2);
        let relation = format!("{verb}_{}_{}", nouns[0], nouns[1]);
        let object_len = 1 + self.rng.below(3);
        let object = self.words(object_len).join(" ");
        let extra_len = 2 + self.rng.below(5);
        let extra = self.words(extra_len).join(" ");
        let statement = format!(
            "{subject} {verb} {} {} {object} {extra}",
            nouns[0], nouns[1]
        );
        self.at += 1;
        let at = Timestamp::from_unix_secs(self.at).unwrap();
        SessionFact::builder(subject, relation, object)
            .tag(Tag::Knowledge)
            .statement(statement)
            .source("cli", SourceRole::User)
            .valid_from(at)
            .recorded_at(at)
            .build()
            .unwrap()
    }

    /// Questions about the facts: an entity (`user` for one in two), a verb and a word,
    /// as someone would ask them.
    pub(crate) fn queries(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                let who = if i % 2 == 0 {
                    "user".to_owned()
                } else {
                    self.entities[self.entity_rank.sample(&mut self.rng)].clone()
                };
                let verb = VERBS[self.rng.below(VERBS.len())];
                let noun = self.word().to_owned();
                format!("which {noun} does the {who} {verb}")
            })
            .collect()
    }
}

/// Fills `store` with generated facts until at least `size` are valid (a few collide on
/// their key and supersede another), in batches of 1,000; says how far it got on stderr.
pub(crate) fn fill(store: &dyn SessionFactStore, size: usize) {
    let mut generator = Generator::new(42);
    let mut valid = store.valid_count().unwrap();
    // A partly filled scope carries on: skip what the generator already gave it.
    for _ in 0..store.stored_count().unwrap() {
        generator.fact();
    }
    while valid < size {
        let batch: Vec<SessionFact> = (0..1_000.min(size - valid))
            .map(|_| generator.fact())
            .collect();
        // A connection another process cut (a test server's tests do) is retried: the
        // batch is added again or refreshed.
        let mut attempts = 0;
        while let Err(error) = store.add(batch.clone()) {
            attempts += 1;
            assert!(attempts < 5, "cold start: cannot add: {error}");
            eprintln!("cold start: retrying a batch: {error}");
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        valid = store.valid_count().unwrap();
        if valid % 100_000 < 1_000 {
            eprintln!("cold start: {valid} of {size} facts");
        }
    }
}

/// The queries of the benchmarks.
pub(crate) fn queries() -> Vec<String> {
    Generator::new(7).queries(50)
}

/// The `facts` binary timed: `$FACTMEM_COLD_FACTS` (another build's, to compare), else
/// this build's.
pub(crate) fn facts_binary() -> std::path::PathBuf {
    std::env::var_os("FACTMEM_COLD_FACTS")
        .filter(|path| !path.is_empty())
        .map_or_else(|| env!("CARGO_BIN_EXE_facts").into(), Into::into)
}

/// Runs `facts mem <command> --db <db> --scope <scope> <query>` to its end; panics when
/// it fails.
pub(crate) fn one_shot(db: &str, scope: &str, command: &str, query: &str) {
    let status = Command::new(facts_binary())
        .args(["mem", command, "--db", db, "--scope", scope])
        .args(query.split(' '))
        .env_remove("FACTMEM_EMBEDDER")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .unwrap();
    assert!(status.success(), "facts mem {command} failed: {status}");
}

/// Where the benchmarks keep their SQLite databases: `cold-start/` in the target
/// directory (beside `release/`, where the `facts` binary is).
pub(crate) fn data_dir() -> std::path::PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_facts"));
    let dir = binary
        .ancestors()
        .nth(2)
        .unwrap_or(Path::new("."))
        .join("cold-start");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
