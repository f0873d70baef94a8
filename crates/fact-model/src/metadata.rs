//! Metadata: a small, flat map from keys to JSON scalars that a fact or an episode
//! carries, and that filters ([`crate::Filter`]) can select on.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// The most keys one [`Metadata`] holds.
pub const MAX_METADATA_KEYS: usize = 32;
/// The longest key, in bytes.
pub const MAX_METADATA_KEY_BYTES: usize = 64;
/// The longest string value, in bytes.
pub const MAX_METADATA_STRING_BYTES: usize = 1024;
/// The largest integer a number value may hold (2^53): every integer up to it is exact
/// as an `f64`, which is how every backend compares numbers.
pub const MAX_SAFE_INTEGER: i64 = 1 << 53;

/// Why a metadata map or value was refused. Its [`code`](Self::code) is
/// `invalid_metadata`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// More than [`MAX_METADATA_KEYS`] keys.
    #[error("metadata holds {count} keys; at most {MAX_METADATA_KEYS} are allowed")]
    TooManyKeys {
        /// How many keys were given.
        count: usize,
    },
    /// A key that is empty, longer than [`MAX_METADATA_KEY_BYTES`], or holds a character
    /// outside `[A-Za-z0-9_.-]`.
    #[error(
        "metadata key `{key}` is not allowed: keys are 1 to {MAX_METADATA_KEY_BYTES} bytes of [A-Za-z0-9_.-]"
    )]
    InvalidKey {
        /// The key, clipped to 80 characters.
        key: String,
    },
    /// The same key twice.
    #[error("metadata key `{key}` is given twice")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A string value longer than [`MAX_METADATA_STRING_BYTES`].
    #[error(
        "metadata value of `{key}` is {bytes} bytes; a string holds at most {MAX_METADATA_STRING_BYTES}"
    )]
    StringTooLong {
        /// The key.
        key: String,
        /// The value's length in bytes.
        bytes: usize,
    },
    /// A number that is not finite, or an integer beyond ±2^53.
    #[error(
        "metadata value of `{key}` is not a number every backend compares exactly: {value} (finite, integers within ±2^53)"
    )]
    Number {
        /// The key.
        key: String,
        /// The number as given.
        value: String,
    },
    /// A value that is not a string, a number or a boolean.
    #[error("metadata value of `{key}` is {found}; only strings, numbers and booleans are allowed")]
    NotScalar {
        /// The key.
        key: String,
        /// What was found: `null`, `an array` or `an object`.
        found: &'static str,
    },
    /// Metadata given as something other than an object.
    #[error("metadata must be a JSON object of scalars, not {found}")]
    NotAnObject {
        /// What was found.
        found: &'static str,
    },
    /// `KEY=VALUE` without the `=`.
    #[error("metadata `{given}` is not KEY=VALUE")]
    NotAPair {
        /// What was given, clipped to 80 characters.
        given: String,
    },
}

impl MetadataError {
    /// The error's stable code: `invalid_metadata`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        "invalid_metadata"
    }
}

/// One metadata value: a JSON string, number or boolean.
///
/// Numbers are kept as `f64` and are exact for integers within ±2^53; an integral
/// number is written without a fraction (`3`, not `3.0`).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// A string of at most [`MAX_METADATA_STRING_BYTES`] bytes.
    String(String),
    /// A finite number.
    Number(f64),
    /// A boolean.
    Bool(bool),
}

impl MetaValue {
    /// The value's JSON type name: `string`, `number` or `boolean`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            MetaValue::String(_) => "string",
            MetaValue::Number(_) => "number",
            MetaValue::Bool(_) => "boolean",
        }
    }

    /// Reads a command-line value with its type: `3` and `-0.5` are numbers, `true` and
    /// `false` booleans, a JSON string literal (`"3"`) the string it holds, and anything
    /// else the string as written.
    ///
    /// ```
    /// use fact_model::MetaValue;
    /// assert_eq!(MetaValue::typed("3"), MetaValue::Number(3.0));
    /// assert_eq!(MetaValue::typed("true"), MetaValue::Bool(true));
    /// assert_eq!(MetaValue::typed("\"3\""), MetaValue::String("3".into()));
    /// assert_eq!(MetaValue::typed("rlm"), MetaValue::String("rlm".into()));
    /// ```
    #[must_use]
    pub fn typed(text: &str) -> MetaValue {
        match text {
            "true" => return MetaValue::Bool(true),
            "false" => return MetaValue::Bool(false),
            _ => {}
        }
        if text.starts_with('"')
            && let Ok(serde_json::Value::String(inner)) = serde_json::from_str(text)
        {
            return MetaValue::String(inner);
        }
        if looks_numeric(text)
            && let Ok(number) = text.parse::<f64>()
            && number.is_finite()
        {
            return MetaValue::Number(number);
        }
        MetaValue::String(text.to_owned())
    }

    /// The value as JSON.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            MetaValue::String(text) => serde_json::Value::String(text.clone()),
            MetaValue::Number(number) => number_json(*number),
            MetaValue::Bool(flag) => serde_json::Value::Bool(*flag),
        }
    }

    /// Checks the value under `key`.
    fn check(&self, key: &str) -> Result<(), MetadataError> {
        match self {
            MetaValue::String(text) if text.len() > MAX_METADATA_STRING_BYTES => {
                Err(MetadataError::StringTooLong {
                    key: key.to_owned(),
                    bytes: text.len(),
                })
            }
            MetaValue::Number(number) if !exact_number(*number) => Err(MetadataError::Number {
                key: key.to_owned(),
                value: number.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// The value of a JSON scalar under `key`.
    ///
    /// # Errors
    ///
    /// [`MetadataError::NotScalar`] for `null`, an array or an object, and the value
    /// checks of [`Metadata`].
    pub fn from_json(key: &str, value: &serde_json::Value) -> Result<MetaValue, MetadataError> {
        let meta = match value {
            serde_json::Value::String(text) => MetaValue::String(text.clone()),
            serde_json::Value::Bool(flag) => MetaValue::Bool(*flag),
            serde_json::Value::Number(number) => match number.as_f64() {
                Some(float) if number.is_f64() || number.as_i64().is_some_and(safe_integer) => {
                    MetaValue::Number(float)
                }
                _ => {
                    return Err(MetadataError::Number {
                        key: key.to_owned(),
                        value: number.to_string(),
                    });
                }
            },
            other => {
                return Err(MetadataError::NotScalar {
                    key: key.to_owned(),
                    found: json_kind(other),
                });
            }
        };
        meta.check(key)?;
        Ok(meta)
    }
}

impl fmt::Display for MetaValue {
    /// As JSON: strings quoted and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

fn looks_numeric(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
}

fn safe_integer(value: i64) -> bool {
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&value)
}

/// Whether `number` is finite and, if integral, within ±2^53.
fn exact_number(number: f64) -> bool {
    number.is_finite() && (number.fract() != 0.0 || number.abs() <= MAX_SAFE_INTEGER as f64)
}

/// `number` as JSON: integral values without a fraction.
pub(crate) fn number_json(number: f64) -> serde_json::Value {
    if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER as f64 {
        // Exact: integral and within ±2^53.
        #[allow(clippy::cast_possible_truncation)]
        let integer = number as i64;
        serde_json::Value::from(integer)
    } else {
        serde_json::Number::from_f64(number).map_or(serde_json::Value::Null, Into::into)
    }
}

pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Whether `key` is a metadata key: 1 to 64 bytes of `[A-Za-z0-9_.-]`.
///
/// ```
/// assert!(fact_model::is_metadata_key("project.name"));
/// assert!(!fact_model::is_metadata_key("a b"));
/// ```
#[must_use]
pub fn is_metadata_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_METADATA_KEY_BYTES
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A flat map from keys to [`MetaValue`]s, kept sorted by key: at most
/// [`MAX_METADATA_KEYS`] keys of 1 to [`MAX_METADATA_KEY_BYTES`] bytes of
/// `[A-Za-z0-9_.-]`, strings of at most [`MAX_METADATA_STRING_BYTES`] bytes.
///
/// Every constructor validates, so a `Metadata` that exists is valid. Empty metadata
/// takes no heap, and a fact without metadata is 8 bytes larger than one before
/// metadata existed. On the wire it is a JSON object.
///
/// ```
/// use fact_model::{MetaValue, Metadata};
///
/// let meta = Metadata::from_json(&serde_json::json!({"project": "rlm", "n": 3}))?;
/// assert_eq!(meta.get("n"), Some(&MetaValue::Number(3.0)));
/// assert_eq!(serde_json::to_string(&meta)?, r#"{"n":3,"project":"rlm"}"#);
///
/// let err = Metadata::from_json(&serde_json::json!({"a b": 1})).unwrap_err();
/// assert_eq!(err.code(), "invalid_metadata");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// Sorted by key, never empty: `None` for no key. Shared, since metadata never
    /// changes once built (the versions of a fact, and the facts of one episode, hold
    /// the same), and behind one thin pointer, so a fact without metadata pays 8 bytes.
    entries: Option<Arc<Vec<Entry>>>,
}

/// One key and its value.
type Entry = (Box<str>, MetaValue);

impl Metadata {
    /// Metadata with no key.
    #[must_use]
    pub const fn new() -> Self {
        Metadata { entries: None }
    }

    /// Metadata holding `pairs`.
    ///
    /// # Errors
    ///
    /// A [`MetadataError`] for too many keys, a bad or repeated key, or a bad value.
    pub fn from_pairs<K: Into<String>>(
        pairs: impl IntoIterator<Item = (K, MetaValue)>,
    ) -> Result<Self, MetadataError> {
        let mut entries: Vec<Entry> = Vec::new();
        for (key, value) in pairs {
            let key: String = key.into();
            if !is_metadata_key(&key) {
                return Err(MetadataError::InvalidKey {
                    key: crate::clip(&key, 80).into_owned(),
                });
            }
            value.check(&key)?;
            entries.push((key.into_boxed_str(), value));
            if entries.len() > MAX_METADATA_KEYS {
                return Err(MetadataError::TooManyKeys {
                    count: entries.len(),
                });
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some([(key, _), _]) = entries
            .windows(2)
            .find(|pair| matches!(pair, [(a, _), (b, _)] if a == b))
        {
            return Err(MetadataError::DuplicateKey {
                key: key.to_string(),
            });
        }
        Ok(Metadata {
            entries: (!entries.is_empty()).then(|| Arc::new(entries)),
        })
    }

    /// Metadata from a JSON object of scalars.
    ///
    /// # Errors
    ///
    /// [`MetadataError::NotAnObject`] for anything but an object, and the checks of
    /// [`from_pairs`](Self::from_pairs).
    pub fn from_json(value: &serde_json::Value) -> Result<Self, MetadataError> {
        let serde_json::Value::Object(map) = value else {
            return Err(MetadataError::NotAnObject {
                found: json_kind(value),
            });
        };
        if map.len() > MAX_METADATA_KEYS {
            return Err(MetadataError::TooManyKeys { count: map.len() });
        }
        let pairs = map
            .iter()
            .map(|(key, value)| Ok((key.clone(), MetaValue::from_json(key, value)?)))
            .collect::<Result<Vec<_>, MetadataError>>()?;
        Metadata::from_pairs(pairs)
    }

    /// Metadata from command-line `KEY=VALUE` pairs, each value read with its type
    /// ([`MetaValue::typed`]).
    ///
    /// # Errors
    ///
    /// [`MetadataError::NotAPair`] for an item without `=`, and the checks of
    /// [`from_pairs`](Self::from_pairs).
    ///
    /// ```
    /// use fact_model::{MetaValue, Metadata};
    /// let meta = Metadata::from_assignments(["project=rlm", "n=3"])?;
    /// assert_eq!(meta.get("n"), Some(&MetaValue::Number(3.0)));
    /// # Ok::<(), fact_model::MetadataError>(())
    /// ```
    pub fn from_assignments<'a>(
        items: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, MetadataError> {
        let pairs = items
            .into_iter()
            .map(|item| {
                let (key, value) = item
                    .split_once('=')
                    .ok_or_else(|| MetadataError::NotAPair {
                        given: crate::clip(item, 80).into_owned(),
                    })?;
                Ok((key.trim().to_owned(), MetaValue::typed(value)))
            })
            .collect::<Result<Vec<_>, MetadataError>>()?;
        Metadata::from_pairs(pairs)
    }

    /// The value under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        let entries = self.entries.as_deref()?;
        entries
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .and_then(|at| entries.get(at))
            .map(|(_, value)| value)
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &MetaValue)> {
        self.entries
            .as_deref()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|(key, value)| (&**key, value))
    }

    /// How many keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.as_deref().map_or(0, Vec::len)
    }

    /// Whether there is no key.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_none()
    }

    /// This metadata with `other`'s pairs on top (`other` wins a key both hold).
    ///
    /// # Errors
    ///
    /// [`MetadataError::TooManyKeys`] when the union holds more than
    /// [`MAX_METADATA_KEYS`] keys.
    pub fn merged(&self, other: &Metadata) -> Result<Metadata, MetadataError> {
        if other.is_empty() {
            return Ok(self.clone());
        }
        let mut pairs: Vec<(String, MetaValue)> = self
            .iter()
            .filter(|(key, _)| other.get(key).is_none())
            .map(|(key, value)| (key.to_owned(), value.clone()))
            .collect();
        pairs.extend(other.iter().map(|(k, v)| (k.to_owned(), v.clone())));
        Metadata::from_pairs(pairs)
    }

    /// The metadata as a JSON object, keys sorted.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.iter()
                .map(|(key, value)| (key.to_owned(), value.to_json()))
                .collect(),
        )
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, &value.to_json())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = Metadata;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of strings, numbers and booleans")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Metadata, A::Error> {
                let mut pairs = Vec::new();
                while let Some((key, value)) = access.next_entry::<String, serde_json::Value>()? {
                    if pairs.len() == MAX_METADATA_KEYS {
                        return Err(de::Error::custom(MetadataError::TooManyKeys {
                            count: MAX_METADATA_KEYS + 1,
                        }));
                    }
                    let value = MetaValue::from_json(&key, &value).map_err(de::Error::custom)?;
                    pairs.push((key, value));
                }
                Metadata::from_pairs(pairs).map_err(de::Error::custom)
            }
        }
        deserializer.deserialize_map(MapVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn each_limit_is_a_typed_error() {
        let many: serde_json::Map<String, serde_json::Value> =
            (0..33).map(|n| (format!("k{n}"), json!(n))).collect();
        assert_eq!(
            Metadata::from_json(&serde_json::Value::Object(many)),
            Err(MetadataError::TooManyKeys { count: 33 })
        );
        let long_key = "k".repeat(65);
        assert!(matches!(
            Metadata::from_json(&json!({ long_key: 1 })),
            Err(MetadataError::InvalidKey { .. })
        ));
        assert!(Metadata::from_json(&json!({ "k".repeat(64): 1 })).is_ok());
        for bad in ["", "a b", "é", "a/b", "a=b"] {
            assert!(
                matches!(
                    Metadata::from_pairs([(bad, MetaValue::Bool(true))]),
                    Err(MetadataError::InvalidKey { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(Metadata::from_json(&json!({"s": "x".repeat(1024)})).is_ok());
        assert_eq!(
            Metadata::from_json(&json!({"s": "x".repeat(1025)})),
            Err(MetadataError::StringTooLong {
                key: "s".into(),
                bytes: 1025
            })
        );
        for (value, found) in [
            (json!(null), "null"),
            (json!([1]), "an array"),
            (json!({"a": 1}), "an object"),
        ] {
            assert_eq!(
                Metadata::from_json(&json!({ "k": value })),
                Err(MetadataError::NotScalar {
                    key: "k".into(),
                    found
                })
            );
        }
        assert!(matches!(
            Metadata::from_json(&json!({"k": 9_007_199_254_740_993_i64})),
            Err(MetadataError::Number { .. })
        ));
        assert!(matches!(
            Metadata::from_pairs([("k", MetaValue::Number(f64::NAN))]),
            Err(MetadataError::Number { .. })
        ));
        assert_eq!(
            Metadata::from_json(&json!([1])),
            Err(MetadataError::NotAnObject { found: "an array" })
        );
        assert_eq!(
            Metadata::from_pairs([("a", MetaValue::Bool(true)), ("a", MetaValue::Bool(false))]),
            Err(MetadataError::DuplicateKey { key: "a".into() })
        );
        assert_eq!(
            Metadata::from_assignments(["novalue"]),
            Err(MetadataError::NotAPair {
                given: "novalue".into()
            })
        );
    }

    #[test]
    fn deserialization_validates_like_from_json() {
        let err = serde_json::from_str::<Metadata>(r#"{"a b": 1}"#).unwrap_err();
        assert!(err.to_string().contains("metadata key `a b`"), "{err}");
        let err = serde_json::from_str::<Metadata>(r#"{"k": [1]}"#).unwrap_err();
        assert!(err.to_string().contains("an array"), "{err}");
        let err = serde_json::from_str::<Metadata>("[1]").unwrap_err();
        assert!(err.to_string().contains("JSON object"), "{err}");
    }

    #[test]
    fn assignments_are_typed() {
        let meta =
            Metadata::from_assignments(["n=3", "f=-0.5", "b=false", "s=\"3\"", "t=rlm", "e="])
                .unwrap();
        assert_eq!(
            meta.to_json(),
            json!({"n": 3, "f": -0.5, "b": false, "s": "3", "t": "rlm", "e": ""})
        );
        // Words that start like numbers but are not stay strings.
        assert_eq!(MetaValue::typed("3rd"), MetaValue::String("3rd".into()));
        assert_eq!(MetaValue::typed("inf"), MetaValue::String("inf".into()));
        assert_eq!(MetaValue::typed("1e999"), MetaValue::String("1e999".into()));
    }

    #[test]
    fn empty_metadata_costs_one_word() {
        assert_eq!(std::mem::size_of::<Metadata>(), 8);
        assert!(
            Metadata::from_pairs(Vec::<(String, MetaValue)>::new())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn merged_lets_the_other_win_and_keeps_the_limit() {
        let base = Metadata::from_json(&json!({"a": 1, "b": 2})).unwrap();
        let top = Metadata::from_json(&json!({"b": "x", "c": true})).unwrap();
        assert_eq!(
            base.merged(&top).unwrap().to_json(),
            json!({"a": 1, "b": "x", "c": true})
        );
        let full: serde_json::Map<String, serde_json::Value> =
            (0..32).map(|n| (format!("k{n}"), json!(n))).collect();
        let full = Metadata::from_json(&serde_json::Value::Object(full)).unwrap();
        assert!(matches!(
            full.merged(&top),
            Err(MetadataError::TooManyKeys { .. })
        ));
    }

    fn value() -> impl Strategy<Value = MetaValue> {
        prop_oneof![
            ".{0,20}".prop_map(MetaValue::String),
            (-1_000_000i64..1_000_000).prop_map(|n| MetaValue::Number(n as f64)),
            (-1.0e6f64..1.0e6).prop_map(MetaValue::Number),
            any::<bool>().prop_map(MetaValue::Bool),
        ]
    }

    proptest! {
        /// The JSON form round-trips, keys come out sorted, and lookups find every key.
        #[test]
        fn json_round_trips(pairs in proptest::collection::btree_map("[a-z0-9_.-]{1,8}", value(), 0..8)) {
            let meta = Metadata::from_pairs(pairs.clone()).unwrap();
            let text = serde_json::to_string(&meta).unwrap();
            let back: Metadata = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&back, &meta);
            prop_assert!(meta.iter().map(|(k, _)| k).collect::<Vec<_>>().windows(2).all(|w| w[0] < w[1]));
            for (key, value) in &pairs {
                prop_assert_eq!(meta.get(key), Some(value));
            }
        }
    }
}
