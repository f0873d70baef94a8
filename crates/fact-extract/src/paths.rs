//! Finding file paths in free text, deliberately.
//!
//! A word of prose is a path when, after trimming the punctuation around it, it is made of
//! path characters and either ends in a known file extension (`Cargo.toml`,
//! `src/core/x.ts`) or is clearly a directory path: it starts with `/`, `./`, `../` or
//! `~/`, ends with `/`, or has at least two separators (`crates/a/src`). Everything else is
//! prose: version numbers (`1.2.3`, `v0.4`), URLs and domains (`https://…`,
//! `github.com/x/y`), abbreviations (`e.g.`), word pairs (`and/or`, `read/write`) and
//! product names (`Node.js`).

/// Extensions that mark a word as a file name (compared case-insensitively).
const EXTENSIONS: &[&str] = &[
    "rs", "toml", "lock", "md", "txt", "json", "jsonl", "yaml", "yml", "ts", "tsx", "js", "jsx",
    "mjs", "cjs", "py", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "rb", "sh", "bash",
    "sql", "html", "css", "scss", "xml", "proto", "graphql", "vue", "svelte", "swift", "ini",
    "cfg", "conf", "env", "csv", "lua", "php", "scala", "dart", "ex", "exs", "zig", "nix",
    "gradle", "mdx", "rst", "svg", "png", "wasm", "snap",
];

/// Domain endings that make a first segment a host, not a directory.
const TLDS: &[&str] = &[
    "com", "org", "net", "io", "dev", "ai", "co", "app", "edu", "gov", "rs",
];

/// Product names written like files.
const PRODUCT_NAMES: &[&str] = &[
    "node.js",
    "vue.js",
    "next.js",
    "nuxt.js",
    "react.js",
    "express.js",
    "three.js",
    "d3.js",
    "chart.js",
    "deno.js",
];

/// Characters trimmed from the start of a word.
const LEADING: &[char] = &['(', '[', '{', '"', '\'', '`', '<', '*'];
/// Characters trimmed from the end of a word.
const TRAILING: &[char] = &[
    '.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '`', '>', '*',
];

/// The paths named in `text`, in order of first appearance, without repeats.
///
/// ```
/// use fact_extract::paths_in;
///
/// let text = "Moved parsing to src/core/parser.ts (see Cargo.toml), bumped to v1.2.3.";
/// assert_eq!(paths_in(text), ["src/core/parser.ts", "Cargo.toml"]);
/// ```
#[must_use]
pub fn paths_in(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    for word in candidate_words(text) {
        if let Some(path) = as_path(word)
            && !found.contains(&path)
        {
            found.push(path);
        }
    }
    found
}

/// Whether `b` is `/`, `\` or `.`, one of which every path has.
fn is_marker(b: u8) -> bool {
    matches!(b, b'/' | b'\\' | b'.')
}

/// The whitespace-separated words of `text` that hold `/`, `\` or `.`, in order: most
/// words of prose have none, so the words are found around those bytes instead of by
/// splitting all of the text.
fn candidate_words(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    std::iter::from_fn(move || {
        let rest = text.get(from..)?;
        let marker = from + rest.bytes().position(is_marker)?;
        // The word around the marker: from after the whitespace before it to the
        // whitespace after it (char boundaries, as a marker byte is a whole char).
        let before = text.get(..marker)?;
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8())
            .max(from);
        let after = text.get(marker..)?;
        let end = marker + after.find(char::is_whitespace).unwrap_or(after.len());
        from = end;
        text.get(start..end)
    })
}

/// The path a whitespace-separated word names, if it names one.
fn as_path(word: &str) -> Option<&str> {
    // Most words of prose have neither a separator nor a dot: reject them cheaply.
    if !word.bytes().any(is_marker) {
        return None;
    }
    let word = word.trim_start_matches(LEADING).trim_end_matches(TRAILING);
    let word = strip_line_suffix(word).trim_end_matches(TRAILING);
    if word.is_empty() || word.contains("://") || !word.chars().all(is_path_char) {
        return None;
    }
    let separators = word.matches(['/', '\\']).count();
    let mut segments = word.split(['/', '\\']).filter(|s| !s.is_empty());
    let first = segments.next()?;
    let segment_count = 1 + segments.clone().count();
    let last = segments.next_back().unwrap_or(first);
    let segments = || word.split(['/', '\\']).filter(|s| !s.is_empty());
    if segments().all(|s| s.chars().all(|c| c.is_ascii_digit() || c == '.')) {
        return None; // 1.2.3, 50/50
    }
    if separators > 0 && segment_count > 1 && looks_like_host(first) {
        return None; // github.com/owner/repo
    }
    if has_known_extension(last) {
        let is_version = separators == 0 && is_version(word);
        let is_product = separators == 0
            && PRODUCT_NAMES
                .iter()
                .any(|name| name.eq_ignore_ascii_case(word));
        return (!is_version && !is_product).then_some(word);
    }
    let anchored = ["/", "./", "../", "~/"].iter().any(|p| word.starts_with(p))
        || word.ends_with('/')
        || word.ends_with('\\');
    (anchored || separators >= 2).then_some(word)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '\\' | '~' | '@' | '+')
}

/// `src/a.rs:42` and `src/a.rs:42:7` name `src/a.rs`.
fn strip_line_suffix(word: &str) -> &str {
    let mut rest = word;
    for _ in 0..2 {
        match rest.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) => {
                rest = head
            }
            _ => break,
        }
    }
    rest
}

fn has_known_extension(segment: &str) -> bool {
    match segment.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && EXTENSIONS
                    .iter()
                    .any(|known| known.eq_ignore_ascii_case(ext))
        }
        None => false,
    }
}

fn looks_like_host(segment: &str) -> bool {
    segment.rsplit_once('.').is_some_and(|(name, tld)| {
        !name.is_empty() && TLDS.iter().any(|t| t.eq_ignore_ascii_case(tld))
    }) && !has_known_extension(segment)
        || segment.starts_with("www.")
}

/// `v1.2`, `1.2.3-beta.1`: a version, even when its last part looks like an extension.
fn is_version(word: &str) -> bool {
    let body = word.strip_prefix(['v', 'V']).unwrap_or(word);
    body.split(['.', '-', '+'])
        .next()
        .is_some_and(|major| !major.is_empty() && major.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: &[&str]) {
        assert_eq!(paths_in(text), expect, "{text:?}");
    }

    #[test]
    fn finds_relative_and_absolute_paths() {
        check("src/core/x.ts", &["src/core/x.ts"]);
        check("crates/a/src/lib.rs", &["crates/a/src/lib.rs"]);
        check("Cargo.toml", &["Cargo.toml"]);
        check(
            "edited ./scripts/run.sh and ../shared/README.md",
            &["./scripts/run.sh", "../shared/README.md"],
        );
        check("/usr/local/bin/tool", &["/usr/local/bin/tool"]);
        check(
            "~/.config/app/settings.json",
            &["~/.config/app/settings.json"],
        );
        check("crates/fact-store/src", &["crates/fact-store/src"]);
        check("the src/core/ folder", &["src/core/"]);
        check(r"src\win\file.cs", &[r"src\win\file.cs"]);
        check("@scope/pkg/index.d.ts", &["@scope/pkg/index.d.ts"]);
        check("package-lock.json", &["package-lock.json"]);
    }

    #[test]
    fn trims_sentence_punctuation_and_line_numbers() {
        check("Updated src/lib.rs.", &["src/lib.rs"]);
        check("(see docs/guide.md), then", &["docs/guide.md"]);
        check(
            "Files: `src/a.rs`, \"src/b.rs\"; [src/c.rs]!",
            &["src/a.rs", "src/b.rs", "src/c.rs"],
        );
        check("panic at src/main.rs:42:7", &["src/main.rs"]);
        check("**README.md**", &["README.md"]);
        check("src/a.rs src/a.rs", &["src/a.rs"]);
    }

    #[test]
    fn ignores_versions_urls_and_prose() {
        check("bumped to 1.2.3 and v0.4.1, then 2.0", &[]);
        check("see https://example.com/docs/page.html", &[]);
        check("github.com/owner/repo and www.example.org/a/b", &[]);
        check("example.com is a domain", &[]);
        check("e.g. this, i.e. that, etc.", &[]);
        check("and/or read/write client/server 50/50", &[]);
        check("Node.js and Vue.js apps", &[]);
        check("a sentence. Another one", &[]);
        check("ratio 3/4/5 is numeric", &[]);
        check("key=value/path.rs", &[]);
        check("", &[]);
        check("... / // .rs", &[]);
    }

    proptest::proptest! {
        /// Looking only around marker bytes finds what splitting every word finds.
        #[test]
        fn finds_what_splitting_all_words_finds(text in "([a-z]|[ /.\\\\é\u{3000}\t]|src/a\\.rs){0,40}") {
            let mut expect: Vec<&str> = Vec::new();
            for word in text.split_whitespace() {
                if let Some(path) = as_path(word)
                    && !expect.contains(&path)
                {
                    expect.push(path);
                }
            }
            proptest::prop_assert_eq!(paths_in(&text), expect);
        }
    }

    #[test]
    fn finds_words_around_markers_like_a_whitespace_split() {
        check("a\u{3000}src/a.rs\u{a0}b", &["src/a.rs"]);
        check(
            "é src/é.rs\tdocs/x.md\n./y",
            &["src/é.rs", "docs/x.md", "./y"],
        );
        check("src/a.rs", &["src/a.rs"]);
        check("  lib.rs  ", &["lib.rs"]);
        check("x/y/z.rs. Then a/b/c.rs", &["x/y/z.rs", "a/b/c.rs"]);
        for text in [
            "a b.c d/e f",
            " . / \\ ",
            "é.é ü/ü",
            "a.b.c",
            "\u{3000}.\u{3000}",
        ] {
            let expect: Vec<&str> = text
                .split_whitespace()
                .filter(|w| w.contains(['/', '\\', '.']))
                .collect();
            assert_eq!(
                candidate_words(text).collect::<Vec<_>>(),
                expect,
                "{text:?}"
            );
        }
    }
}
