//! The limit on one request, whatever carries it: a line of `facts replay`, a frame of
//! `facts mcp` on stdio, the body of a POST to `facts mcp --http`. `--max-request-bytes`
//! sets it (16 MiB by default). A line past it is skipped as it is read, never held: what
//! is kept of it is at most the limit, and it is dropped as soon as the line proves
//! longer. While skipping, the line's top-level `"id"` is looked for, so the error can
//! carry the request's id.

use std::io::{self, BufRead};

use serde_json::Value;

/// `--max-request-bytes`' default, 16 MiB, as clap shows it.
pub(crate) const DEFAULT_MAX_REQUEST: &str = "16MiB";

/// The smallest limit `--max-request-bytes` takes: every message of an MCP handshake
/// must fit.
pub(crate) const MIN_MAX_REQUEST_BYTES: usize = 1024;

/// The most bytes of a skipped line's id kept (a longer id is not echoed).
const MAX_ID_BYTES: usize = 256;

/// The capacity a line buffer keeps after an oversized line, so one long line does not
/// hold the limit's worth of memory for the rest of the session.
const KEPT_CAPACITY: usize = 64 * 1024;

/// Parses a size: a number of bytes, or a number with `KiB`, `MiB` or `GiB` (or `K`,
/// `M`, `G`; any case), at least [`MIN_MAX_REQUEST_BYTES`].
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let unit_bytes: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size: give bytes (16777216) or a number with KiB, MiB \
                 or GiB (16MiB)"
            ));
        }
    };
    let bytes = number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit_bytes))
        .ok_or_else(|| format!("{text:?} is not a size this machine can address"))?;
    if bytes < MIN_MAX_REQUEST_BYTES {
        return Err(format!(
            "{text:?} is below the smallest limit, {MIN_MAX_REQUEST_BYTES} bytes (1 KiB)"
        ));
    }
    Ok(bytes)
}

/// `bytes` for people: `16777216 bytes (16 MiB)`, or just the bytes when they are no
/// whole number of KiB, MiB or GiB.
pub(crate) fn describe(bytes: usize) -> String {
    let unit = [(30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|(shift, _)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift));
    match unit {
        Some((shift, name)) => format!("{bytes} bytes ({} {name})", bytes >> shift),
        None => format!("{bytes} bytes"),
    }
}

/// `text` cut to at most `max_chars` characters, the last of them `…` when cut: what
/// an error message may echo of a request.
pub(crate) fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().nth(max_chars).is_none() {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// What [`read_line`] read.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// The end of the input: nothing more.
    End,
    /// A whole line, its `\n` included, within the limit.
    Whole,
    /// The last bytes of the input, within the limit but not ended by `\n`.
    Partial,
    /// A line past the limit, skipped: its length without the `\n`, its top-level
    /// `"id"` when it is a JSON object that has one (its text at most 256 bytes), and
    /// whether a `\n` ended it (else the input did).
    TooLong {
        bytes: u64,
        id: Option<Value>,
        ended: bool,
    },
}

/// Reads the next line of `input` into `line` (cleared first), holding no more than
/// `limit` bytes of it plus the `\n`: a longer line is read to its end and dropped as it
/// goes ([`Line::TooLong`]), and `line` is left empty. The `\n` does not count.
pub(crate) fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    limit: usize,
) -> io::Result<Line> {
    line.clear();
    // Once the line is past the limit: its length so far, and the look for its id.
    let mut skipped: Option<(u64, IdScan)> = None;
    loop {
        let (taken, ended) = {
            let available = match input.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(match skipped {
                    Some((bytes, scan)) => Line::TooLong {
                        bytes,
                        id: scan.id(),
                        ended: false,
                    },
                    None if line.is_empty() => Line::End,
                    None => Line::Partial,
                });
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let content = newline.unwrap_or(available.len());
            let taken = newline.map_or(available.len(), |at| at + 1);
            let text = available.get(..content).unwrap_or_default();
            match &mut skipped {
                Some((bytes, scan)) => {
                    scan.feed(text);
                    *bytes += content as u64;
                }
                None if line.len() + content > limit => {
                    let mut scan = IdScan::default();
                    scan.feed(line);
                    scan.feed(text);
                    skipped = Some(((line.len() + content) as u64, scan));
                    line.clear();
                    line.shrink_to(KEPT_CAPACITY);
                }
                None => {
                    let whole = available.get(..taken).unwrap_or_default();
                    reserve(line, whole.len(), limit);
                    line.extend_from_slice(whole);
                }
            }
            (taken, newline.is_some())
        };
        input.consume(taken);
        if ended {
            return Ok(match skipped {
                Some((bytes, scan)) => Line::TooLong {
                    bytes,
                    id: scan.id(),
                    ended: true,
                },
                None => Line::Whole,
            });
        }
    }
}

/// Makes room for `more` bytes in `line`, doubling as `Vec` does but never past the
/// limit and its `\n`, so a line at the limit costs the limit, not twice it.
fn reserve(line: &mut Vec<u8>, more: usize, limit: usize) {
    let needed = line.len().saturating_add(more);
    if needed <= line.capacity() {
        return;
    }
    let target = line
        .capacity()
        .saturating_mul(2)
        .min(limit.saturating_add(1))
        .max(needed);
    line.reserve_exact(target - line.len());
}

/// Looks for the top-level `"id"` of a JSON object fed to it in pieces, keeping a few
/// bytes of state and at most [`MAX_ID_BYTES`] of the id: the id of a request too long
/// to parse. A string value's escapes are followed; a line that is no JSON object has
/// no id.
#[derive(Debug, Default)]
pub(crate) struct IdScan {
    /// How deep in objects and arrays (1: in the top-level object).
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The next string at depth 1 is a key.
    expect_key: bool,
    /// The key being read, at depth 1 (`None` once it cannot be `id`).
    key: Option<Vec<u8>>,
    /// The last key at depth 1 was `id`: its value follows the `:`.
    key_is_id: bool,
    /// The id's text, while it is read.
    value: Option<Vec<u8>>,
    /// The answer, once known: `Some(None)` when there is no id to be found.
    found: Option<Option<Value>>,
}

impl IdScan {
    /// The id, if the bytes fed so far hold one.
    pub(crate) fn id(&self) -> Option<Value> {
        self.found.clone().flatten()
    }

    /// Reads the next piece of the line.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while self.found.is_none() {
            // Inside a string nobody keeps, only a quote or a backslash matters.
            if self.in_string && !self.escaped && self.key.is_none() && self.value.is_none() {
                match bytes.iter().position(|&b| b == b'"' || b == b'\\') {
                    Some(at) => bytes = bytes.get(at..).unwrap_or_default(),
                    None => return,
                }
            }
            let Some((&byte, rest)) = bytes.split_first() else {
                return;
            };
            bytes = rest;
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.keep(byte);
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
                // An escaped key is not spelled `id` plainly: not looked for.
                self.key = None;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.key_is_id = key == b"id\"";
                }
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                } else {
                    self.keep(byte);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && byte == b'[' {
                    self.found = Some(None);
                    return;
                }
                self.keep(byte);
                self.depth += 1;
                self.expect_key = self.depth == 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                } else {
                    self.keep(byte);
                }
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 && self.found.is_none() {
                    self.found = Some(None);
                }
            }
            b':' if self.depth == 1 && self.key_is_id && self.value.is_none() => {
                self.key_is_id = false;
                self.value = Some(Vec::new());
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if self.depth == 0 => self.found = Some(None),
            _ => self.keep(byte),
        }
    }

    /// Keeps a byte of the key or the id being read; an id longer than
    /// [`MAX_ID_BYTES`] is given up.
    fn keep(&mut self, byte: u8) {
        if let Some(key) = &mut self.key {
            key.push(byte);
            if key.len() > 3 {
                self.key = None;
            }
        }
        if let Some(value) = &mut self.value {
            value.push(byte);
            if value.len() > MAX_ID_BYTES {
                self.found = Some(None);
            }
        }
    }

    /// The id's value ended (at a `,` or the closing `}` of the top-level object).
    fn end_value(&mut self) {
        if let Some(value) = self.value.take() {
            self.found = Some(serde_json::from_slice(&value).ok());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::string_slice)]

    use serde_json::json;

    use super::*;

    /// Every line of `input` as [`read_line`] reads it with `limit`, with the kept bytes.
    fn lines(input: &[u8], limit: usize, buffer: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = io::BufReader::with_capacity(buffer, input);
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let next = read_line(&mut reader, &mut line, limit).unwrap();
            if next == Line::End {
                return read;
            }
            read.push((next, line.clone()));
        }
    }

    #[test]
    fn a_line_at_the_limit_is_kept_and_one_past_it_skipped_with_its_id() {
        for buffer in [1, 3, 8, 64] {
            let read = lines(
                b"12345678\n{\"id\": 7, \"x\": 1}\n123456789\n\n1234",
                8,
                buffer,
            );
            assert_eq!(read[0], (Line::Whole, b"12345678\n".to_vec()));
            assert_eq!(
                read[1],
                (
                    Line::TooLong {
                        bytes: 17,
                        id: Some(json!(7)),
                        ended: true
                    },
                    Vec::new()
                ),
                "buffer {buffer}"
            );
            assert_eq!(
                read[2].0,
                Line::TooLong {
                    bytes: 9,
                    id: None,
                    ended: true
                }
            );
            assert_eq!(read[3], (Line::Whole, b"\n".to_vec()));
            assert_eq!(read[4], (Line::Partial, b"1234".to_vec()));
            assert_eq!(read.len(), 5);
        }
        let read = lines(b"0123456789", 4, 2);
        assert_eq!(
            read,
            [(
                Line::TooLong {
                    bytes: 10,
                    id: None,
                    ended: false
                },
                Vec::new()
            )]
        );
    }

    #[test]
    fn a_line_buffer_never_grows_past_the_limit() {
        let mut line = Vec::new();
        let text = vec![b'x'; 1000];
        let mut input = io::BufReader::with_capacity(7, &text[..]);
        let _ = read_line(&mut input, &mut line, 1000).unwrap();
        assert_eq!(line.len(), 1000);
        assert!(line.capacity() <= 1001, "{}", line.capacity());
    }

    /// The id [`IdScan`] finds in `text`, fed in pieces of `piece` bytes.
    fn id(text: &str, piece: usize) -> Option<Value> {
        let mut scan = IdScan::default();
        for chunk in text.as_bytes().chunks(piece) {
            scan.feed(chunk);
        }
        scan.id()
    }

    #[test]
    fn the_id_is_found_first_last_or_not_at_all() {
        let big = "y".repeat(10_000);
        let cases = [
            (
                r#"{"jsonrpc": "2.0", "id": 12, "method": "x"}"#.to_owned(),
                Some(json!(12)),
            ),
            (
                format!(r#"{{"method": "x", "params": {{"id": 1, "t": "{big}"}}, "id": "a\"b"}}"#),
                Some(json!("a\"b")),
            ),
            (
                format!(r#"{{"t": "\"id\": 3, {big}", "id" : null }}"#),
                Some(Value::Null),
            ),
            (
                r#"{"action": "x", "id": {"k": [1, 2]}}"#.to_owned(),
                Some(json!({"k": [1, 2]})),
            ),
            (r#"{"i\u0064": 4}"#.to_owned(), None),
            (r#"{"idx": 4, "xid": 5}"#.to_owned(), None),
            (r#"[{"id": 5}]"#.to_owned(), None),
            (r#"{"id": 5"#.to_owned(), None),
            (format!(r#"{{"id": "{big}"}}"#), None),
            ("not json".to_owned(), None),
        ];
        for (text, expected) in cases {
            for piece in [1, 2, 5, 4096] {
                assert_eq!(
                    id(&text, piece),
                    expected,
                    "{piece}: {}",
                    &text[..text.len().min(80)]
                );
            }
        }
    }

    #[test]
    fn sizes_take_binary_units_and_refuse_less_than_a_kib() {
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("16777216"), Ok(16 << 20));
        assert_eq!(parse_size(" 8 m"), Ok(8 << 20));
        assert_eq!(parse_size("1gib"), Ok(1 << 30));
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert!(parse_size("1023").unwrap_err().contains("1 KiB"));
        assert!(parse_size("16MB").unwrap_err().contains("MiB"));
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999999").is_err());
        assert_eq!(describe(16 << 20), "16777216 bytes (16 MiB)");
        assert_eq!(describe(1536), "1536 bytes");
        assert_eq!(describe(3 << 10), "3072 bytes (3 KiB)");
        assert_eq!(clip("short", 5), "short");
        assert_eq!(clip("a longer one", 5), "a lo…");
        assert_eq!(clip("ééééé", 3), "éé…");
    }
}
