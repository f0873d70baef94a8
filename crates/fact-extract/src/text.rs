//! Text as facts and prompts need it: trimmed, blank or not, folded onto one line and
//! clipped, borrowed whenever it already fits.

use std::borrow::Cow;

use fact_model::clip;

/// `text.trim()`, with a shortcut for text that starts and ends with visible ASCII, as
/// nearly all text of a result does.
#[inline]
pub(crate) fn trim(text: &str) -> &str {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => text,
        _ => text.trim(),
    }
}

/// Whether `text` is empty or only whitespace.
#[inline]
pub(crate) fn is_blank(text: &str) -> bool {
    // Text that starts with a visible ASCII character is not blank: no trimming needed.
    match text.as_bytes().first() {
        Some(b) if b.is_ascii_graphic() => false,
        _ => text.trim().is_empty(),
    }
}

/// [`clip`] that keeps owned text that fits instead of copying it.
pub(crate) fn clip_owned(text: Cow<'_, str>, max_chars: usize) -> Cow<'_, str> {
    match text {
        Cow::Borrowed(text) => clip(text, max_chars),
        Cow::Owned(text) => {
            let clipped = match clip(&text, max_chars) {
                Cow::Borrowed(_) => None,
                Cow::Owned(clipped) => Some(clipped),
            };
            Cow::Owned(clipped.unwrap_or(text))
        }
    }
}

/// [`one_line`] that keeps owned text that needs no folding instead of copying it.
pub(crate) fn one_line_owned(text: Cow<'_, str>) -> Cow<'_, str> {
    match text {
        Cow::Borrowed(text) => one_line(text),
        Cow::Owned(text) => {
            let folded = match one_line(&text) {
                Cow::Borrowed(folded) if folded.len() == text.len() => None,
                folded => Some(folded.into_owned()),
            };
            Cow::Owned(folded.unwrap_or(text))
        }
    }
}

/// `text` with leading and trailing whitespace removed and every inner run of whitespace
/// replaced by one space; borrowed when it already is so.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    let trimmed = trim(text);
    let normal = !needs_char_check(trimmed.as_bytes()) || {
        // Any char: no whitespace but single spaces.
        let mut previous_space = false;
        trimmed.chars().all(|c| {
            let ok = c == ' ' && !previous_space || !c.is_whitespace();
            previous_space = c == ' ';
            ok
        })
    };
    if normal {
        Cow::Borrowed(trimmed)
    } else {
        let mut out = String::with_capacity(trimmed.len());
        for word in trimmed.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        Cow::Owned(out)
    }
}

/// Whether `bytes` hold anything but ASCII without control characters and single spaces:
/// a non-ASCII or control byte (tabs and newlines among them), or two spaces in a row.
/// Eight bytes at a time, as `u64` words.
fn needs_char_check(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const SPACES: u64 = ONES * 0x20;
    let mut chunks = bytes.chunks_exact(8);
    let mut previous_space = false;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            return true;
        };
        let word = u64::from_le_bytes(word);
        // A high bit is a non-ASCII byte; among ASCII bytes, this borrow test finds one
        // below 0x20.
        if (word | (word.wrapping_sub(SPACES) & !word)) & HIGH != 0 {
            return true;
        }
        // The high bit of every byte that is a space (exact: no carries between bytes).
        let other = word ^ SPACES;
        let spaces = !(((other & LOW) + LOW) | other) & HIGH;
        if spaces & (spaces >> 8) != 0 || previous_space && spaces & 0x80 != 0 {
            return true;
        }
        previous_space = spaces >> 63 != 0;
    }
    for &b in chunks.remainder() {
        let space = b == b' ';
        if !(0x20..0x80).contains(&b) || space && previous_space {
            return true;
        }
        previous_space = space;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{needs_char_check, one_line};

    #[test]
    fn one_line_folds_whitespace_and_borrows_when_it_can() {
        for (text, expect) in [
            ("plain text", "plain text"),
            ("  padded  ", "padded"),
            (
                "two  spaces\tand\ttabs\nand lines",
                "two spaces and tabs and lines",
            ),
            ("é  ü\u{3000}日本", "é ü 日本"),
            ("a\u{b}b", "a b"),
            ("a\u{85}b", "a b"),
            ("ü\u{b}b", "ü b"),
            ("", ""),
        ] {
            assert_eq!(one_line(text), expect, "{text:?}");
        }
        assert!(matches!(
            one_line("already fine"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(one_line("é ü"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn the_word_check_agrees_with_a_byte_check() {
        let byte_check = |bytes: &[u8]| {
            bytes.iter().any(|b| !(0x20..0x80).contains(b))
                || bytes.windows(2).any(|pair| pair == b"  ")
        };
        let alphabet = [b'a', b' ', b'\t', b'\n', 0x1f, 0x7f, 0x80, 0xc3, b'~'];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..40 {
            for _ in 0..300 {
                let text: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        // Mostly letters and spaces, so that double spaces are rare.
                        let pick = (state % 24) as usize;
                        alphabet
                            .get(pick)
                            .copied()
                            .unwrap_or(if pick.is_multiple_of(2) { b'a' } else { b' ' })
                    })
                    .collect();
                assert_eq!(needs_char_check(&text), byte_check(&text), "{text:?}");
            }
        }
    }
}
