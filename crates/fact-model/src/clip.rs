//! Clipping text on `char` boundaries.
//!
//! Every crate of the workspace shortens text through [`clip`], so no code ever slices a
//! `str` by byte index and every cut is marked the same way.

use std::borrow::Cow;

/// The marker appended to clipped text.
pub const ELLIPSIS: &str = "...";

/// Clips `text` to at most `max_chars` characters, marking a cut with [`ELLIPSIS`].
///
/// Counts Unicode scalar values (`char`s), never bytes, so a cut can never split a
/// multi-byte character. Text that already fits is returned borrowed and unchanged.
/// When it does not fit, the result is the first `max_chars - 3` characters followed by
/// `...`, so it is exactly `max_chars` characters long. When `max_chars` is smaller than
/// the marker itself, the result is the first `max_chars` characters of the marker.
///
/// # Examples
///
/// ```
/// use fact_model::clip;
///
/// assert_eq!(clip("short", 10), "short");
/// assert_eq!(clip("a longer sentence", 10), "a longe...");
/// // Multi-byte characters are counted as one each and never split.
/// assert_eq!(clip("ééééé", 4), "é...");
/// assert_eq!(clip("abcdef", 2), "..");
/// ```
#[must_use]
pub fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    // A char is at least one byte, so text of at most `max_chars` bytes fits.
    if text.len() <= max_chars {
        return Cow::Borrowed(text);
    }
    let marker_chars = ELLIPSIS.len(); // the marker is ASCII: one byte per char
    let keep = max_chars.saturating_sub(marker_chars);
    // The byte offset where the kept prefix ends, and whether there is a char number
    // `max_chars + 1` at all (if not, the text fits). ASCII text, the common case, has one
    // byte per char and needs no walk.
    let cut = if text.is_ascii() {
        keep
    } else {
        let mut cut = None;
        let mut overflows = false;
        for (n, (at, _)) in text.char_indices().enumerate() {
            if n == keep {
                cut = Some(at);
            }
            if n == max_chars {
                overflows = true;
                break;
            }
        }
        match cut {
            Some(cut) if overflows => cut,
            _ => return Cow::Borrowed(text),
        }
    };
    if max_chars < marker_chars {
        return Cow::Owned(ELLIPSIS.chars().take(max_chars).collect());
    }
    let mut out = String::with_capacity(cut + ELLIPSIS.len());
    out.push_str(text.get(..cut).unwrap_or_default());
    out.push_str(ELLIPSIS);
    Cow::Owned(out)
}

/// Returns the number of `char`s in `text`.
///
/// A named helper so that limits are always checked in characters, the unit every limit
/// in this workspace is stated in.
///
/// ```
/// assert_eq!(fact_model::char_len("né"), 2);
/// ```
#[must_use]
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(text: &str, max: usize, expect: &str) {
        assert_eq!(clip(text, max), expect, "clip({text:?}, {max})");
    }

    #[test]
    fn clips_on_char_boundaries() {
        check("", 0, "");
        check("", 5, "");
        check("abc", 3, "abc");
        check("abcd", 3, "...");
        check("abcd", 0, "");
        check("abcd", 1, ".");
        check("hello world", 8, "hello...");
        check("日本語のテキスト", 5, "日本...");
        check("👩‍👩‍👧 family", 4, "👩...");
    }

    #[test]
    fn text_that_fits_is_borrowed() {
        assert!(matches!(clip("fits", 4), Cow::Borrowed(_)));
    }

    proptest! {
        #[test]
        fn never_exceeds_limit_and_keeps_prefix(text in any::<String>(), max in 0usize..64) {
            let clipped = clip(&text, max);
            prop_assert!(char_len(&clipped) <= max);
            if char_len(&text) <= max {
                prop_assert_eq!(clipped.as_ref(), text.as_str());
            } else if max >= 3 {
                let expect: String = text.chars().take(max - 3).chain("...".chars()).collect();
                prop_assert_eq!(clipped.as_ref(), expect.as_str());
            }
        }
    }
}
