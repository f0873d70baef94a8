//! [`FactText`]: the text of a fact's fields, cheap to share between facts.

use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The immutable text of a [`SessionFact`](crate::SessionFact) field.
///
/// The facts of one dispatch result repeat the same text: each carries the task id, most
/// name `task:3`, and every relation comes from a fixed table. A `FactText` made with
/// [`from_static`](Self::from_static) allocates nothing, one made with
/// [`shared`](Self::shared) is allocated once and counted by every clone, and one converted
/// from a `String` keeps that string without copying it. However it was made, it compares,
/// orders, hashes, prints and serializes exactly as the `str` it holds.
///
/// ```
/// use fact_model::FactText;
///
/// let task = FactText::shared("task:3");
/// let again = task.clone(); // a reference count, not a copy
/// assert_eq!(again, "task:3");
/// assert_eq!(FactText::from_static("modified_by").len(), 11);
/// assert_eq!(FactText::from(String::from("x")), FactText::from_static("x"));
/// assert_eq!(serde_json::to_string(&task)?, "\"task:3\"");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct FactText(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
    Owned(String),
}

impl FactText {
    /// Text that lives for the whole program: no allocation, ever.
    #[must_use]
    #[inline]
    pub const fn from_static(text: &'static str) -> FactText {
        FactText(Repr::Static(text))
    }

    /// Text allocated once and shared by every clone.
    #[must_use]
    #[inline]
    pub fn shared(text: &str) -> FactText {
        FactText(Repr::Shared(Arc::from(text)))
    }

    /// The text.
    #[must_use]
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            Repr::Shared(text) => text,
            Repr::Owned(text) => text,
        }
    }

    /// The text as a `String`, copied only when it is not already an owned one.
    #[must_use]
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(text) => text,
            Repr::Static(text) => text.to_owned(),
            Repr::Shared(text) => text.as_ref().to_owned(),
        }
    }
}

impl Default for FactText {
    fn default() -> Self {
        FactText::from_static("")
    }
}

impl Deref for FactText {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for FactText {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for FactText {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for FactText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for FactText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for FactText {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for FactText {}

impl PartialOrd for FactText {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FactText {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// Hashes as the `str`, so maps keyed by `FactText` can be searched with a `&str`.
impl Hash for FactText {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for FactText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FactText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for FactText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<FactText> for str {
    fn eq(&self, other: &FactText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<FactText> for &str {
    fn eq(&self, other: &FactText) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<FactText> for String {
    fn eq(&self, other: &FactText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl From<String> for FactText {
    #[inline]
    fn from(text: String) -> Self {
        FactText(Repr::Owned(text))
    }
}

/// Copies the text (use [`FactText::from_static`] or [`FactText::shared`] to avoid copies).
impl From<&str> for FactText {
    #[inline]
    fn from(text: &str) -> Self {
        FactText(Repr::Owned(text.to_owned()))
    }
}

impl From<&String> for FactText {
    fn from(text: &String) -> Self {
        FactText::from(text.as_str())
    }
}

impl From<Box<str>> for FactText {
    fn from(text: Box<str>) -> Self {
        FactText(Repr::Owned(text.into_string()))
    }
}

impl From<Cow<'_, str>> for FactText {
    #[inline]
    fn from(text: Cow<'_, str>) -> Self {
        FactText(Repr::Owned(text.into_owned()))
    }
}

impl From<Arc<str>> for FactText {
    fn from(text: Arc<str>) -> Self {
        FactText(Repr::Shared(text))
    }
}

impl From<FactText> for String {
    fn from(text: FactText) -> Self {
        text.into_string()
    }
}

impl Serialize for FactText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FactText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(FactText::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_representation_behaves_as_its_str() {
        let texts = [
            FactText::from_static("src/a.rs"),
            FactText::shared("src/a.rs"),
            FactText::from(String::from("src/a.rs")),
            FactText::from("src/a.rs"),
            FactText::from(Cow::Borrowed("src/a.rs")),
            FactText::from(Arc::<str>::from("src/a.rs")),
        ];
        let set: HashSet<&FactText> = texts.iter().collect();
        assert_eq!(set.len(), 1);
        for text in &texts {
            assert_eq!(text, "src/a.rs");
            assert_eq!(format!("{text} {text:?}"), "src/a.rs \"src/a.rs\"");
            assert_eq!(serde_json::to_string(text).unwrap(), "\"src/a.rs\"");
            assert_eq!(text.clone().into_string(), "src/a.rs");
            assert_eq!(text.cmp(&FactText::from_static("src/b.rs")), Ordering::Less);
        }
        let set: HashSet<FactText> = texts.into_iter().collect();
        assert!(set.contains("src/a.rs"));
        let parsed: FactText = serde_json::from_str("\"é\"").unwrap();
        assert_eq!(parsed, "é");
        assert_eq!(FactText::default(), "");
    }

    #[test]
    fn is_no_larger_than_a_string() {
        assert_eq!(size_of::<FactText>(), size_of::<String>());
    }

    #[test]
    fn shared_clones_share_one_allocation() {
        let text = FactText::shared("task:1");
        let clone = text.clone();
        assert!(std::ptr::eq(text.as_str(), clone.as_str()));
    }
}
