//! [`format_memory`]: a user's memory (context, history, facts) as prompt text within a
//! token budget (seed 002, memory formatting for context injection).

use std::cmp::Ordering;

use fact_model::{MemoryHistory, SessionFact, Tag, UserContext};

use fact_model::TokenCounter;

/// One remembered fact: a line of the `Facts:` section of [`format_memory`].
///
/// ```
/// use fact_model::Tag;
/// use fact_retrieve::MemoryFact;
///
/// let fact = MemoryFact::new("prefers tabs", Tag::Preference, 0.9);
/// assert_eq!(fact.content, "prefers tabs");
/// assert_eq!(fact.category, Tag::Preference);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryFact {
    /// The fact in words.
    pub content: String,
    /// Its category, usually a memory category such as [`Tag::Preference`].
    pub category: Tag,
    /// How sure, normally in `0..=1`; facts are listed from the most confident down.
    pub confidence: f64,
}

impl MemoryFact {
    /// A fact with the given content, category and confidence.
    #[must_use]
    pub fn new(content: impl Into<String>, category: Tag, confidence: f64) -> Self {
        MemoryFact {
            content: content.into(),
            category,
            confidence,
        }
    }

    /// The memory fact for a stored [`SessionFact`].
    ///
    /// The content is the fact's statement when it has one, otherwise
    /// `"{subject} {relation} {object}"`; the category is the fact's first tag and the
    /// confidence is the fact's.
    ///
    /// ```
    /// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// use fact_retrieve::MemoryFact;
    ///
    /// let fact = SessionFact::builder("user", "prefers", "dark mode")
    ///     .tags([Tag::Preference, Tag::Behavior])
    ///     .source("chat-1", SourceRole::Extractor)
    ///     .valid_from(Timestamp::UNIX_EPOCH)
    ///     .confidence(0.8)
    ///     .build()?;
    /// let memory = MemoryFact::from_session_fact(&fact);
    /// assert_eq!(memory, MemoryFact::new("user prefers dark mode", Tag::Preference, 0.8));
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[must_use]
    pub fn from_session_fact(fact: &SessionFact) -> Self {
        let content = match fact.statement() {
            Some(statement) => statement.to_owned(),
            None => format!("{} {} {}", fact.subject(), fact.relation(), fact.object()),
        };
        // A fact always has at least one tag; `Knowledge` only keeps this total.
        let category = fact
            .tags()
            .as_slice()
            .first()
            .copied()
            .unwrap_or(Tag::Knowledge);
        MemoryFact::new(content, category, fact.confidence())
    }
}

impl From<&SessionFact> for MemoryFact {
    fn from(fact: &SessionFact) -> Self {
        MemoryFact::from_session_fact(fact)
    }
}

/// Everything [`format_memory`] renders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryData {
    /// The `User Context:` section.
    pub user: UserContext,
    /// The `History:` section.
    pub history: MemoryHistory,
    /// The `Facts:` section, in any order; they are rendered by confidence.
    pub facts: Vec<MemoryFact>,
}

/// What ends a truncated rendering.
const TRUNCATION_MARKER: &str = "\n...";

/// Renders a user's memory as prompt text of at most `max_tokens` tokens by `counter`.
///
/// # Format
///
/// Up to three sections, separated by one blank line, with no trailing newline:
///
/// ```text
/// User Context:
/// - Work: {work}
/// - Personal: {personal}
/// - Top of mind: {top_of_mind}
///
/// History:
/// - Recent months: {recent_months}
/// - Earlier context: {earlier_context}
/// - Long-term background: {long_term_background}
///
/// Facts:
/// - [{category} | {confidence:.2}] {content}
/// ```
///
/// - A field that is empty or blank is left out, and so is a section with nothing in
///   it; empty data renders as `""`.
/// - Facts are listed by confidence, highest first; ties keep their input order and a
///   `NaN` confidence sorts last. The confidence is printed with two decimals as Rust
///   formats it (`NaN` and `inf` included). Facts with blank content are skipped.
/// - Every field and fact content is made safe to embed in a tagged prompt: `&`, `<` and
///   `>` become `&amp;`, `&lt;` and `&gt;`, so injected text cannot close a surrounding
///   tag. Every run of whitespace that holds a line break becomes one space (one fact
///   stays one line), and leading and trailing whitespace is trimmed.
///
/// # Token budget
///
/// When the rendering costs more than `max_tokens`, facts are dropped one at a time from
/// the lowest confidence up until it fits. If it still does not fit with no facts left,
/// the text is cut at a character boundary to the longest prefix that, with trailing
/// whitespace removed and `"\n..."` appended, fits; that is returned. If not even
/// `"\n..."` fits, the result is `""`. Whatever the input, `counter.count(&result)` is at
/// most `max_tokens` (for any counter that counts `""` as zero tokens), and the function
/// never panics.
///
/// ```
/// use fact_model::{CharsPerToken, Tag, TokenCounter};
/// use fact_retrieve::{MemoryData, MemoryFact, MemoryHistory, UserContext, format_memory};
///
/// let data = MemoryData {
///     user: UserContext {
///         work: "Rust engineer".into(),
///         ..UserContext::default()
///     },
///     history: MemoryHistory::default(),
///     facts: vec![
///         MemoryFact::new("uses <vim>", Tag::Preference, 0.6),
///         MemoryFact::new("ships on Fridays", Tag::Behavior, 0.875),
///     ],
/// };
/// let counter = CharsPerToken::default();
/// assert_eq!(
///     format_memory(&data, 2000, &counter),
///     "User Context:\n- Work: Rust engineer\n\n\
///      Facts:\n- [behavior | 0.88] ships on Fridays\n- [preference | 0.60] uses &lt;vim&gt;"
/// );
///
/// // A tighter budget drops the least confident fact first.
/// let tight = format_memory(&data, 20, &counter);
/// assert_eq!(
///     tight,
///     "User Context:\n- Work: Rust engineer\n\nFacts:\n- [behavior | 0.88] ships on Fridays"
/// );
/// assert!(counter.count(&tight) <= 20);
///
/// // With no fact left and still too long, the text is cut and marked.
/// assert_eq!(format_memory(&data, 3, &counter), "User Con\n...");
/// assert_eq!(format_memory(&data, 0, &counter), "");
/// assert_eq!(format_memory(&MemoryData::default(), 2000, &counter), "");
/// ```
#[must_use]
pub fn format_memory(data: &MemoryData, max_tokens: usize, counter: &dyn TokenCounter) -> String {
    let rendered = Rendered::new(data);
    // Dropping the least confident fact keeps a prefix of the full rendering, so each
    // candidate is a prefix ending where a fact line (or the head) ends.
    for kept in (0..=rendered.fact_ends.len()).rev() {
        let candidate = rendered.with_facts(kept);
        if counter.count(candidate) <= max_tokens {
            return candidate.to_owned();
        }
    }
    truncate(rendered.with_facts(0), max_tokens, counter)
}

/// The full rendering, and where it ends with only the first `k` facts.
struct Rendered {
    /// Everything: the sections, facts sorted from the most confident down.
    text: String,
    /// Where the text ends without any fact (the head sections only).
    head_end: usize,
    /// `fact_ends[i]`: where the text ends with the first `i + 1` facts.
    fact_ends: Vec<usize>,
}

impl Rendered {
    fn new(data: &MemoryData) -> Self {
        let user = section(
            "User Context:",
            &[
                ("Work", &data.user.work),
                ("Personal", &data.user.personal),
                ("Top of mind", &data.user.top_of_mind),
            ],
        );
        let history = section(
            "History:",
            &[
                ("Recent months", &data.history.recent_months),
                ("Earlier context", &data.history.earlier_context),
                ("Long-term background", &data.history.long_term_background),
            ],
        );
        let mut text = String::new();
        for part in [user, history].into_iter().flatten() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&part);
        }
        let head_end = text.len();

        let mut facts: Vec<(&MemoryFact, String)> = data
            .facts
            .iter()
            .filter_map(|fact| {
                let content = sanitize(&fact.content);
                (!content.is_empty()).then_some((fact, content))
            })
            .collect();
        // `sort_by` is stable: ties keep their input order.
        facts.sort_by(|(a, _), (b, _)| by_confidence_descending(a.confidence, b.confidence));

        let mut fact_ends = Vec::with_capacity(facts.len());
        for (i, (fact, content)) in facts.iter().enumerate() {
            if i == 0 {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str("Facts:");
            }
            text.push_str("\n- [");
            text.push_str(fact.category.as_str());
            text.push_str(" | ");
            text.push_str(&format!("{:.2}", fact.confidence));
            text.push_str("] ");
            text.push_str(content);
            fact_ends.push(text.len());
        }
        Rendered {
            text,
            head_end,
            fact_ends,
        }
    }

    /// The rendering with only the `kept` most confident facts.
    fn with_facts(&self, kept: usize) -> &str {
        let end = match kept.checked_sub(1) {
            None => self.head_end,
            Some(last) => self.fact_ends.get(last).copied().unwrap_or(self.text.len()),
        };
        self.text.get(..end).unwrap_or(&self.text)
    }
}

/// `title` and a `- {label}: {value}` line for each non-blank value; `None` when every
/// value is blank.
fn section(title: &str, fields: &[(&str, &String)]) -> Option<String> {
    let mut out = String::from(title);
    let mut any = false;
    for (label, value) in fields {
        let value = sanitize(value);
        if value.is_empty() {
            continue;
        }
        any = true;
        out.push_str("\n- ");
        out.push_str(label);
        out.push_str(": ");
        out.push_str(&value);
    }
    any.then_some(out)
}

/// `text` escaped (`&`, `<`, `>`), with every run of whitespace that holds a line break
/// folded to one space and surrounding whitespace trimmed.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Whitespace seen since the last other character: where it starts in `text`, and
    // whether it holds a line break.
    let text = text.trim();
    let mut gap: Option<(usize, bool)> = None;
    for (index, c) in text.char_indices() {
        if c.is_whitespace() {
            let (start, has_break) = gap.unwrap_or((index, false));
            gap = Some((start, has_break || is_line_break(c)));
            continue;
        }
        if let Some((start, has_break)) = gap.take() {
            if has_break {
                out.push(' ');
            } else {
                out.push_str(text.get(start..index).unwrap_or(" "));
            }
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// Whether `c` ends a line for some reader: `\n`, `\r`, vertical tab, form feed, NEL,
/// and the Unicode line and paragraph separators.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Highest confidence first; `NaN` after everything else; equal values compare equal.
fn by_confidence_descending(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => b.partial_cmp(&a).unwrap_or(Ordering::Equal),
    }
}

/// The longest char-boundary prefix of `text` that fits with [`TRUNCATION_MARKER`]
/// appended, or `""` when not even the marker fits.
fn truncate(text: &str, max_tokens: usize, counter: &dyn TokenCounter) -> String {
    let with_marker = |chars: usize| -> String {
        let end = text
            .char_indices()
            .nth(chars)
            .map_or(text.len(), |(index, _)| index);
        let prefix = text.get(..end).unwrap_or("");
        let mut out = String::with_capacity(end + TRUNCATION_MARKER.len());
        out.push_str(prefix.trim_end());
        out.push_str(TRUNCATION_MARKER);
        if counter.count(&out) <= max_tokens {
            return out;
        }
        // Trimming normally only saves tokens; fall back to the untrimmed prefix for a
        // counter where it does not.
        out.clear();
        out.push_str(prefix);
        out.push_str(TRUNCATION_MARKER);
        out
    };
    let fits = |candidate: &str| counter.count(candidate) <= max_tokens;

    let mut best = with_marker(0);
    if !fits(&best) {
        return String::new();
    }
    // Binary search for the most characters that fit; `best` always holds a candidate
    // that was checked to fit, so the bound holds even for a non-monotone counter.
    let mut low = 0;
    let mut high = text.chars().count();
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        let candidate = with_marker(mid);
        if fits(&candidate) {
            low = mid;
            best = candidate;
        } else {
            high = mid - 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use fact_model::CharsPerToken;

    #[test]
    fn sanitize_escapes_and_folds_line_breaks() {
        assert_eq!(
            sanitize("  a<b>&c \r\n\n d\u{2028}e  "),
            "a&lt;b&gt;&amp;c d e"
        );
        assert_eq!(sanitize("one\n    two  three\t4"), "one two  three\t4");
        assert_eq!(sanitize(" \n\t "), "");
        assert_eq!(sanitize("&lt;"), "&amp;lt;");
    }

    #[test]
    fn nan_sorts_last_and_ties_are_equal() {
        let mut values = [0.5, f64::NAN, 1.0, f64::NEG_INFINITY, 0.5, f64::INFINITY];
        values.sort_by(|a, b| by_confidence_descending(*a, *b));
        assert_eq!(values[0], f64::INFINITY);
        assert_eq!(values[1], 1.0);
        assert_eq!(values[4], f64::NEG_INFINITY);
        assert!(values[5].is_nan());
        assert_eq!(by_confidence_descending(0.0, -0.0), Ordering::Equal);
    }

    #[test]
    fn truncate_keeps_whole_chars_and_fits() {
        let counter = CharsPerToken::new(1);
        let text = "ééééé\nçççç";
        assert_eq!(truncate(text, 7, &counter), "ééé\n...");
        // The trailing newline of the prefix is trimmed before the marker.
        assert_eq!(truncate(text, 10, &counter), "ééééé\n...");
        assert_eq!(truncate(text, 4, &counter), "\n...");
        assert_eq!(truncate(text, 3, &counter), "");
    }

    #[test]
    fn with_facts_selects_prefixes() {
        let data = MemoryData {
            facts: vec![
                MemoryFact::new("b", Tag::Goal, 0.1),
                MemoryFact::new("a", Tag::Goal, 0.9),
            ],
            ..MemoryData::default()
        };
        let rendered = Rendered::new(&data);
        assert_eq!(rendered.with_facts(0), "");
        assert_eq!(rendered.with_facts(1), "Facts:\n- [goal | 0.90] a");
        assert_eq!(rendered.with_facts(2), rendered.text);
    }
}
