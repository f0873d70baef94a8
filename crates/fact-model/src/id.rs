//! [`FactId`]: the content address of a `(subject, relation, object)` triple.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The deterministic identity of a fact: 16 lowercase hex characters.
///
/// # Encoding
///
/// The id is the first 8 bytes of the BLAKE3 hash of this byte string, written as hex:
///
/// ```text
/// for field in [subject, relation, object]:
///     u64 little-endian byte length of the field's UTF-8 ‖ the field's UTF-8 bytes
/// ```
///
/// The length prefixes make the encoding unambiguous: `("ab", "c", …)` and `("a", "bc", …)`
/// hash differently. The encoding is frozen: golden vectors in the tests guard it, because
/// ids are persisted in snapshots.
///
/// # Examples
///
/// ```
/// use fact_model::FactId;
///
/// let id = FactId::for_triple("src/lib.rs", "modified_by", "task:1");
/// assert_eq!(id.to_string().len(), 16);
/// assert_eq!(id, id.to_string().parse()?);
/// assert_ne!(FactId::for_triple("ab", "c", "x"), FactId::for_triple("a", "bc", "x"));
/// # Ok::<(), fact_model::ParseFactIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FactId([u8; 8]);

/// Hashes as one `u64`: the id is already a uniform hash, so integer hashers can use it.
impl std::hash::Hash for FactId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from_le_bytes(self.0));
    }
}

/// Why a string is not a [`FactId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fact id {input:?}: expected 16 lowercase hex characters")]
pub struct ParseFactIdError {
    /// The rejected text, clipped to 64 characters.
    pub input: String,
}

impl FactId {
    /// The id of a `(subject, relation, object)` triple (see the type docs for the encoding).
    #[must_use]
    pub fn for_triple(subject: &str, relation: &str, object: &str) -> FactId {
        let fields = [subject, relation, object];
        // Typical triples fit a stack buffer, and one-shot hashing of a short input is
        // much cheaper than streaming it through a `Hasher`; both give the same hash. The
        // buffer is sized to the input so that short triples zero less of it.
        let encoded_len = fields
            .iter()
            .fold(0usize, |sum, field| sum.saturating_add(8 + field.len()));
        let hash = if encoded_len <= 128 {
            hash_on_stack::<128>(fields)
        } else if encoded_len <= 512 {
            hash_on_stack::<512>(fields)
        } else {
            None
        };
        let mut out = [0u8; 8];
        match hash {
            Some(hash) => out.copy_from_slice(hash.as_bytes().get(..8).unwrap_or(&[0; 8])),
            None => {
                let mut hasher = blake3::Hasher::new();
                for field in fields {
                    hasher.update(&(field.len() as u64).to_le_bytes());
                    hasher.update(field.as_bytes());
                }
                hasher.finalize_xof().fill(&mut out);
            }
        }
        FactId(out)
    }

    /// The raw 8 bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 8] {
        &self.0
    }
}

/// The hash of the documented encoding of `fields`, from an `N`-byte stack buffer; `None`
/// when the encoding does not fit.
#[inline]
fn hash_on_stack<const N: usize>(fields: [&str; 3]) -> Option<blake3::Hash> {
    let mut buffer = [0u8; N];
    encode_into(&mut buffer, fields).map(blake3::hash)
}

/// Writes the documented encoding of `fields` into `buffer`; `None` when it does not fit.
fn encode_into<'b>(buffer: &'b mut [u8], fields: [&str; 3]) -> Option<&'b [u8]> {
    let mut at = 0;
    for field in fields {
        let len = (field.len() as u64).to_le_bytes();
        buffer.get_mut(at..at + len.len())?.copy_from_slice(&len);
        at += len.len();
        buffer
            .get_mut(at..at + field.len())?
            .copy_from_slice(field.as_bytes());
        at += field.len();
    }
    buffer.get(..at)
}

impl fmt::Display for FactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for FactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FactId({self})")
    }
}

impl FromStr for FactId {
    type Err = ParseFactIdError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = || ParseFactIdError {
            input: crate::clip(input, 64).into_owned(),
        };
        let bytes = input.as_bytes();
        if bytes.len() != 16 {
            return Err(error());
        }
        let nibble = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 8];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let [hi, lo] = pair else { return Err(error()) };
            *slot = (nibble(*hi).ok_or_else(error)? << 4) | nibble(*lo).ok_or_else(error)?;
        }
        Ok(FactId(out))
    }
}

impl Serialize for FactId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FactId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Golden vectors: these ids are persisted, so they must never change. The values were
    /// computed independently, with Python's `blake3` package over the documented encoding.
    #[test]
    fn golden_vectors() {
        let cases = [
            (("", "", ""), "db27f030ad8e467c"),
            (("src/lib.rs", "modified_by", "task:1"), "b554dbdb8fd56136"),
            (
                ("task:1", "completed_with", "completed"),
                "052738ca51d2cfdb",
            ),
            (("ab", "c", "x"), "b1382b59cac22966"),
            (("a", "bc", "x"), "75dbf9104da62d9e"),
            (("naïve ünïcode", "関係", "🦀"), "0405abe56c8a0a6f"),
        ];
        for ((s, r, o), expect) in cases {
            assert_eq!(
                FactId::for_triple(s, r, o).to_string(),
                expect,
                "({s:?}, {r:?}, {o:?})"
            );
        }
    }

    #[test]
    fn golden_vector_matches_documented_encoding() {
        let mut encoded = Vec::new();
        for field in ["src/lib.rs", "modified_by", "task:1"] {
            encoded.extend_from_slice(&(field.len() as u64).to_le_bytes());
            encoded.extend_from_slice(field.as_bytes());
        }
        let hash = blake3::hash(&encoded);
        let expect: String = hash.as_bytes()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            FactId::for_triple("src/lib.rs", "modified_by", "task:1").to_string(),
            expect
        );
    }

    #[test]
    fn long_triples_hash_like_short_ones() {
        // Over the 512-byte stack buffer, the streaming path must give the documented hash.
        let subject = "s".repeat(300);
        let object = "o".repeat(300);
        let mut encoded = Vec::new();
        for field in [subject.as_str(), "r", object.as_str()] {
            encoded.extend_from_slice(&(field.len() as u64).to_le_bytes());
            encoded.extend_from_slice(field.as_bytes());
        }
        let expect: String = blake3::hash(&encoded).as_bytes()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            FactId::for_triple(&subject, "r", &object).to_string(),
            expect
        );
    }

    #[test]
    fn every_buffer_size_hashes_the_documented_encoding() {
        // Encodings of 24 + n bytes, around the 128- and 512-byte stack buffers.
        for n in [0, 1, 103, 104, 105, 200, 487, 488, 489, 1000] {
            let subject = "s".repeat(n / 2);
            let object = "é".repeat((n - n / 2) / 2) + &"o".repeat((n - n / 2) % 2);
            let mut encoded = Vec::new();
            for field in [subject.as_str(), "", object.as_str()] {
                encoded.extend_from_slice(&(field.len() as u64).to_le_bytes());
                encoded.extend_from_slice(field.as_bytes());
            }
            assert_eq!(encoded.len(), 24 + n);
            let expect = FactId(blake3::hash(&encoded).as_bytes()[..8].try_into().unwrap());
            assert_eq!(FactId::for_triple(&subject, "", &object), expect, "{n}");
        }
    }

    #[test]
    fn parse_rejects_non_ids() {
        for bad in [
            "",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789ABCDEF",
            "0123456789abcdeg",
            "ééééééééé",
        ] {
            assert!(bad.parse::<FactId>().is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<FactId>("\"xyz\"").is_err());
    }

    #[test]
    fn a_large_structured_set_has_no_collisions() {
        // 200k triples built to stress the length prefixes: the same characters split at
        // every position between subject and relation.
        let mut seen = HashMap::new();
        for n in 0..20_000u32 {
            let text = format!("src/mod{n}/file.rs");
            for cut in [0, 1, 3, 5, 8, 10, 12, 14, 15, 16] {
                let cut = cut.min(text.len());
                let (s, r) = text.split_at(cut);
                let id = FactId::for_triple(s, r, "task:1");
                assert_eq!(
                    seen.insert(id, (s.to_owned(), r.to_owned())),
                    None,
                    "collision on {id}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn display_parse_roundtrip(bytes in any::<[u8; 8]>()) {
            let id = FactId(bytes);
            prop_assert_eq!(id.to_string().parse::<FactId>().unwrap(), id);
        }

        #[test]
        fn distinct_triples_distinct_ids(
            triples in proptest::collection::hash_set((".{0,12}", ".{0,6}", ".{0,12}"), 1..5000)
        ) {
            let mut seen = HashMap::new();
            for (s, r, o) in &triples {
                let id = FactId::for_triple(s, r, o);
                prop_assert_eq!(id, FactId::for_triple(s, r, o));
                if let Some(previous) = seen.insert(id, (s, r, o)) {
                    prop_assert!(false, "{:?} and {:?} share id {}", previous, (s, r, o), id);
                }
            }
        }
    }
}
