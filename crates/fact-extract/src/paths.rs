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
    for word in text.split_whitespace() {
        if let Some(path) = as_path(word)
            && !found.contains(&path)
        {
            found.push(path);
        }
    }
    found
}

/// The path a whitespace-separated word names, if it names one.
fn as_path(word: &str) -> Option<&str> {
    // Most words of prose have neither a separator nor a dot: reject them cheaply.
    if !word.contains(['/', '\\', '.']) {
        return None;
    }
    let word = word.trim_start_matches(LEADING).trim_end_matches(TRAILING);
    let word = strip_line_suffix(word).trim_end_matches(TRAILING);
    if word.is_empty() || word.contains("://") || !word.chars().all(is_path_char) {
        return None;
    }
    let separators = word.matches(['/', '\\']).count();
    let segments: Vec<&str> = word.split(['/', '\\']).filter(|s| !s.is_empty()).collect();
    let first = segments.first()?;
    let last = segments.last()?;
    if segments
        .iter()
        .all(|s| s.chars().all(|c| c.is_ascii_digit() || c == '.'))
    {
        return None; // 1.2.3, 50/50
    }
    if separators > 0 && segments.len() > 1 && looks_like_host(first) {
        return None; // github.com/owner/repo
    }
    if has_known_extension(last) {
        let is_version = separators == 0 && is_version(word);
        let is_product =
            separators == 0 && PRODUCT_NAMES.contains(&word.to_ascii_lowercase().as_str());
        return (!is_version && !is_product).then_some(word);
    }
    let anchored = ["/", "./", "../", "~/"].iter().any(|p| word.starts_with(p))
        || word.ends_with('/')
        || word.ends_with('\\');
    ((anchored && !segments.is_empty()) || separators >= 2).then_some(word)
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
}
