//! The `Key: value` sections of a task's prompt: how the prompt is cut into pieces and
//! which pieces open a section (the rules are those of **Sections** on
//! [`parse_tasks`](crate::parse_tasks)).

/// Keys that open a prompt section at the start of any line, not only of a paragraph.
const LINE_START_KEYS: [&str; 5] = ["Role", "Task", "Restrictions", "Success", "Instructions"];

/// `Key:` at the start of `text` after blanks, per `^\s*([A-Z][A-Za-z ]{0,30}):`: the key
/// (trailing spaces trimmed) and the byte offset just after the colon.
pub(crate) fn key_at(text: &str) -> Option<(&str, usize)> {
    let body = text.trim_start();
    let lead = text.len().saturating_sub(body.len());
    let mut chars = body.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_ascii_uppercase() {
        return None;
    }
    // The colon, after at most 30 letters or spaces.
    let (colon, _) = chars
        .take(31)
        .find(|&(_, c)| !(c.is_ascii_alphabetic() || c == ' '))
        .filter(|&(_, c)| c == ':')?;
    Some((body.get(..colon)?.trim_end(), lead + colon + 1))
}

/// The first key in `piece` after a `: ` (the end of an introduction), with the offset
/// just after its colon.
fn embedded_key(piece: &str) -> Option<(&str, usize)> {
    piece.match_indices(':').find_map(|(i, _)| {
        let after = piece.get(i + 1..)?;
        if !after.starts_with(char::is_whitespace) {
            return None;
        }
        key_at(after).map(|(key, end)| (key, i + 1 + end))
    })
}

/// The byte ranges of the prompt's pieces (see the module documentation).
fn pieces(text: &str) -> Vec<(usize, usize)> {
    let mut separators: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    let mut first = true;
    let mut after_blank = false;
    let mut after_pipe = false;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end();
        let body = content.trim_start();
        if body.is_empty() {
            after_blank = true;
            continue;
        }
        let mut from = start + (content.len() - body.len());
        let mut to = start + content.len();
        let line_start_key = key_at(body).is_some_and(|(key, _)| LINE_START_KEYS.contains(&key));
        if !first && (after_blank || after_pipe || line_start_key) {
            separators.push((from, from));
        }
        first = false;
        after_blank = false;
        if body.starts_with('|') {
            separators.push((from, from + 1));
            from += 1;
        }
        after_pipe = to > from && body.ends_with('|');
        if after_pipe {
            to -= 1;
        }
        if let Some(rest) = text.get(from..to) {
            // One searcher per line; matches never overlap, as `find` from each end did.
            let base = from;
            separators.extend(
                rest.match_indices(" | ")
                    .map(|(at, _)| (base + at, base + at + 3)),
            );
        }
        if after_pipe {
            separators.push((to, to + 1));
        }
    }
    let mut ranges = Vec::with_capacity(separators.len() + 1);
    let mut cursor = 0;
    for (sep_start, sep_end) in separators {
        if sep_start >= cursor {
            ranges.push((cursor, sep_start));
            cursor = sep_end;
        }
    }
    ranges.push((cursor, text.len()));
    ranges
}

/// The `Key: value` sections of a prompt (see the module documentation).
pub(crate) fn prompt_sections(
    prompt: &str,
) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    // (key, value start, value end) as byte offsets into the prompt.
    let mut sections: Vec<(&str, usize, usize)> = Vec::new();
    let mut in_echo = false;
    for (start, end) in pieces(prompt) {
        let Some(piece) = prompt.get(start..end) else {
            continue;
        };
        let body = piece.trim_start();
        if body.is_empty() {
            continue;
        }
        if let Some((key, after)) = key_at(piece) {
            sections.push((key, start + after, end));
            in_echo = false;
        } else if body.starts_with('_') && key_at(body.get(1..).unwrap_or("")).is_some() {
            in_echo = true;
        } else if !in_echo {
            match sections.last_mut() {
                Some(open) => open.2 = end,
                None => sections
                    .extend(embedded_key(piece).map(|(key, after)| (key, start + after, end))),
            }
        }
    }
    // Keys borrow from the prompt: recover their offsets, then trim the value range.
    let base = prompt.as_ptr() as usize;
    sections
        .into_iter()
        .filter_map(|(key, from, to)| {
            let key_start = (key.as_ptr() as usize).checked_sub(base)?;
            let raw = prompt.get(from..to)?;
            let lead = raw.len() - raw.trim_start().len();
            let value = raw.trim();
            Some((
                key_start..key_start + key.len(),
                from + lead..from + lead + value.len(),
            ))
        })
        .collect()
}
