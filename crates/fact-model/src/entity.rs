//! [`normalize_entity`]: one spelling per entity, so that "User", " user " and "I" are
//! the same subject of long-term memory.

/// The canonical subject of the user in long-term memory.
pub const USER_ENTITY: &str = "user";

/// Words that name the user when a conversation is about them.
const USER_WORDS: &[&str] = &["i", "me", "myself", "user", "the user"];

/// An entity name as long-term memory keys it: trimmed, case-folded, every run of
/// whitespace one space; and the words that name the person talking (`I`, `me`,
/// `myself`, `User`, `the user`) become [`USER_ENTITY`].
///
/// Case folding is Unicode lowercasing (`char::to_lowercase`); names that differ only in
/// letter case are one entity.
///
/// ```
/// use fact_model::normalize_entity;
///
/// assert_eq!(normalize_entity("  User "), "user");
/// assert_eq!(normalize_entity("I"), "user");
/// assert_eq!(normalize_entity("Melanie\t Smith"), "melanie smith");
/// assert_eq!(normalize_entity("project:RLM"), "project:rlm");
/// ```
#[must_use]
pub fn normalize_entity(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for word in name.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    if USER_WORDS.contains(&out.as_str()) {
        return USER_ENTITY.to_owned();
    }
    out
}
