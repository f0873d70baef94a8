//! The **import-circles** rule: no module of a crate imports in a circle.
//!
//! A *module* is one `.rs` file of a crate's `src/` tree: `lib.rs` (or `main.rs` when
//! there is no `lib.rs`) is the crate root, `a.rs` and `a/mod.rs` are module `a`, and
//! `a/b.rs` is `a::b`. `#[path]` attributes are not followed. Test modules in their own
//! files (`tests.rs` declared `#[cfg(test)] mod tests;`) are modules like any other: they
//! import their parent (`use super::*;`) and nothing imports them, so they never close a
//! circle on their own. A `main.rs` next to a `lib.rs`, and `src/bin/*.rs`, are separate
//! crate roots that nothing in the library can import; they are left out.
//!
//! File F *imports* module M when F names a path that resolves to M's file:
//!
//! - every leaf of every `use` item, nested brace groups expanded (`use
//!   crate::{a::B, c::{D, E}};` names `crate::a::B`, `crate::c::D` and `crate::c::E`), globs
//!   included (`use super::*;` imports the parent);
//! - every path in code (`crate::x::y::f(..)`, `super::Z`, `self::w::V`).
//!
//! A path counts when it starts with `crate`, `self` or `super`, with the name of a child
//! module of the file (`pub use error::StoreError;` in `lib.rs`), or with a name the file
//! binds with `use` to such a path (`use crate::sql;` then `sql::rules::f()`). Other paths
//! name other crates. A path resolves to the deepest module file along it
//! (`crate::sql::rules::Writer` is `sql/rules.rs`); when the next segment names an item
//! that module only imports (`crate::StoreError` where `lib.rs` has `pub use
//! crate::error::StoreError;`, or a glob re-export whose source defines it), the path
//! resolves to where the import points, so a facade that re-exports items adds no edge
//! from its users to itself. An item defined in the module itself (a `pub trait` in
//! `lib.rs`) is an edge to that module; a re-export of another crate's item is no edge.
//! The facade's own `use` items are edges out of it, so a root that re-exports every
//! module and also defines an item that those modules import is in a circle with them.
//!
//! `mod x;` declarations are not edges, nor is a file's path to itself. Comments and
//! string, byte-string and character literals are blanked out before scanning, so docs
//! and messages may spell any path.
//!
//! Every strongly connected component of more than one file (Tarjan's algorithm) is one
//! violation, naming the files and, for each edge between them, the first path that made
//! it.

use std::collections::{BTreeMap, BTreeSet};

/// How many `use` aliases and re-exports a path is followed through before the rule gives
/// up on it (the compiler rejects alias cycles; this guards against them anyway).
const MAX_HOPS: usize = 8;
/// How many of those hops may go through glob re-exports, each of which is tried in turn
/// (a bound on the search, which branches at every glob).
const MAX_GLOB_HOPS: usize = 3;
/// How deeply brace groups of a `use` item may nest before the item is skipped.
const MAX_GROUP_DEPTH: usize = 32;
/// Keywords that define an item named by the identifier after them.
const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

/// Checks one crate's module graph for import circles.
///
/// `files` are the crate's `.rs` files under its `src/` directory as (path, text); each
/// path is `/`-separated and contains a `src` component (`crates/x/src/a/b.rs`); the
/// module path is what follows the first `src/`. Messages name files by these paths, and
/// the crate by `crate_name`. Returns one message per circle, sorted.
pub(super) fn check_import_circles(crate_name: &str, files: &[(String, String)]) -> Vec<String> {
    let model = CrateModel::new(files);
    let edges = model.edges();
    let mut adjacency = vec![Vec::new(); model.files.len()];
    for &(from, to) in edges.keys() {
        adjacency[from].push(to);
    }
    let mut violations = Vec::new();
    for component in strongly_connected(&adjacency) {
        if component.len() < 2 {
            continue;
        }
        let path = |index: usize| model.files[index].path.as_str();
        let mut members: Vec<&str> = component.iter().map(|&index| path(index)).collect();
        members.sort_unstable();
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let mut arrows: Vec<String> = edges
            .iter()
            .filter(|((from, to), _)| inside.contains(from) && inside.contains(to))
            .map(|(&(from, to), text)| format!("    {} -> {} ({text})", path(from), path(to)))
            .collect();
        arrows.sort_unstable();
        violations.push(format!(
            "{}: [import-circles] crate `{crate_name}`: {} modules import in a circle: {}\n\
             {}\n    fix: move the item both sides need down into a module that both can \
             import (a new one if need be), or invert the dependency with a trait that the \
             lower module defines and the upper one implements",
            members[0],
            members.len(),
            members.join(", "),
            arrows.join("\n"),
        ));
    }
    violations.sort_unstable();
    violations
}

// ---------------------------------------------------------------------------
// The crate's modules and the paths they name
// ---------------------------------------------------------------------------

/// A module path inside the crate, one segment per module (`[]` is the root).
type ModulePath = Vec<String>;

/// One leaf of a `use` item.
#[derive(Debug, Clone)]
struct UseLeaf {
    /// The module the item sits in: the file's module, plus any inline `mod x { .. }`.
    scope: ModulePath,
    /// The path, group prefixes included and a trailing `self` removed.
    segments: Vec<String>,
    /// The name the leaf binds (its last segment or its `as` name); `None` for globs and
    /// `as _`.
    binding: Option<String>,
    /// Whether the leaf is a glob (`a::*`).
    glob: bool,
    /// Whether the item is at the top level of the file (not in a block or inline module),
    /// where other modules can reach what it binds.
    top_level: bool,
}

/// A path named in code, outside `use` items.
#[derive(Debug, Clone)]
struct CodePath {
    /// The module the path is named in.
    scope: ModulePath,
    /// Its segments, up to the first that is not an identifier.
    segments: Vec<String>,
}

/// What one file says, as far as the rule needs.
#[derive(Debug, Default)]
struct FileScan {
    /// The leaves of its `use` items.
    uses: Vec<UseLeaf>,
    /// The paths in its code that may name a module of the crate.
    paths: Vec<CodePath>,
    /// The names of the items it defines at its top level.
    items: BTreeSet<String>,
}

/// One file of the crate.
#[derive(Debug)]
struct FileModel {
    /// The path the caller gave.
    path: String,
    /// Its module path; `None` for files outside the library's module tree.
    module: Option<ModulePath>,
    /// What it says.
    scan: FileScan,
}

/// A crate's files and the module tree they form.
#[derive(Debug)]
struct CrateModel {
    /// The files, in the caller's order.
    files: Vec<FileModel>,
    /// Module path to index in `files`.
    modules: BTreeMap<ModulePath, usize>,
}

impl CrateModel {
    /// Scans every file and maps the module tree.
    fn new(files: &[(String, String)]) -> Self {
        let has_lib = files
            .iter()
            .any(|(path, _)| src_relative(path) == ["lib.rs"]);
        let mut model = Self {
            files: Vec::new(),
            modules: BTreeMap::new(),
        };
        for (path, text) in files {
            let module = module_path(&src_relative(path), has_lib);
            let scan = module
                .as_deref()
                .map(|module| scan_file(module, text))
                .unwrap_or_default();
            if let Some(module) = &module {
                model
                    .modules
                    .entry(module.clone())
                    .or_insert(model.files.len());
            }
            model.files.push(FileModel {
                path: path.clone(),
                module,
                scan,
            });
        }
        model
    }

    /// Every edge `(importer, imported)` of the graph, with the first path that made it.
    fn edges(&self) -> BTreeMap<(usize, usize), String> {
        let mut edges = BTreeMap::new();
        for (index, file) in self.files.iter().enumerate() {
            if file.module.is_none() {
                continue;
            }
            let uses = file.scan.uses.iter().map(|leaf| {
                let mut text = leaf.segments.join("::");
                if leaf.glob {
                    text.push_str("::*");
                }
                (&leaf.scope, &leaf.segments, text)
            });
            let paths = file
                .scan
                .paths
                .iter()
                .map(|path| (&path.scope, &path.segments, path.segments.join("::")));
            for (scope, segments, text) in uses.chain(paths) {
                let target = self
                    .absolutize(index, scope, segments, 0)
                    .and_then(|absolute| self.target(&absolute, 0));
                if let Some(target) = target.filter(|&target| target != index) {
                    edges.entry((index, target)).or_insert(text);
                }
            }
        }
        edges
    }

    /// The absolute module path of `segments`, named in `scope` of file `file`; `None` when
    /// it names another crate (or climbs above the root).
    fn absolutize(
        &self,
        file: usize,
        scope: &[String],
        segments: &[String],
        hops: usize,
    ) -> Option<ModulePath> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => {
                let mut base = scope.to_vec();
                base.pop()?;
                let supers = rest.iter().take_while(|segment| *segment == "super");
                for _ in supers {
                    base.pop()?;
                }
                let rest = rest.iter().skip_while(|segment| *segment == "super");
                base.extend(rest.cloned());
                return Some(base);
            }
            name => {
                let mut child = scope.to_vec();
                child.push(name.to_owned());
                if self.modules.contains_key(&child) {
                    child
                } else if hops < MAX_HOPS {
                    let leaf = self.files[file]
                        .scan
                        .uses
                        .iter()
                        .find(|leaf| leaf.binding.as_deref() == Some(name))?;
                    self.absolutize(file, &leaf.scope, &leaf.segments, hops + 1)?
                } else {
                    return None;
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file an absolute path resolves to: the deepest module file along it, or, when
    /// the next segment names an item that module only imports, where the import points.
    /// `None` when the path leads to another crate's item.
    fn target(&self, absolute: &[String], hops: usize) -> Option<usize> {
        let depth = (0..=absolute.len())
            .rev()
            .find(|&depth| self.modules.contains_key(&absolute[..depth]))?;
        let file = *self.modules.get(&absolute[..depth])?;
        let Some(name) = absolute.get(depth) else {
            return Some(file);
        };
        if hops >= MAX_HOPS {
            return Some(file);
        }
        let scan = &self.files[file].scan;
        let top_level = || scan.uses.iter().filter(|leaf| leaf.top_level);
        if let Some(leaf) = top_level().find(|leaf| leaf.binding.as_ref() == Some(name)) {
            let mut pointed = self.absolutize(file, &leaf.scope, &leaf.segments, hops + 1)?;
            pointed.extend(absolute[depth + 1..].iter().cloned());
            return self.target(&pointed, hops + 1);
        }
        if !scan.items.contains(name) && hops < MAX_GLOB_HOPS {
            for glob in top_level().filter(|leaf| leaf.glob) {
                let Some(mut candidate) =
                    self.absolutize(file, &glob.scope, &glob.segments, hops + 1)
                else {
                    continue;
                };
                candidate.extend(absolute[depth..].iter().cloned());
                let found = self.target(&candidate, hops + 1);
                if let Some(found) =
                    found.filter(|&found| found != file && self.provides(found, name))
                {
                    return Some(found);
                }
            }
        }
        Some(file)
    }

    /// Whether `file` defines `name` or binds it at its top level.
    fn provides(&self, file: usize, name: &str) -> bool {
        let scan = &self.files[file].scan;
        scan.items.contains(name)
            || scan
                .uses
                .iter()
                .any(|leaf| leaf.top_level && leaf.binding.as_deref() == Some(name))
    }
}

/// The components of `path` after its first `src` component (all of them if it has none).
fn src_relative(path: &str) -> Vec<&str> {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.iter().position(|part| *part == "src") {
        Some(at) => parts[at + 1..].to_vec(),
        None => parts,
    }
}

/// The module path of a file, from its components under `src/`; `None` for files outside
/// the library's module tree (not `.rs`, `src/bin/`, or `main.rs` next to a `lib.rs`).
fn module_path(relative: &[&str], has_lib: bool) -> Option<ModulePath> {
    let (file, dirs) = relative.split_last()?;
    let stem = file.strip_suffix(".rs")?;
    if dirs.first() == Some(&"bin") {
        return None;
    }
    let mut module: ModulePath = dirs.iter().map(|dir| (*dir).to_owned()).collect();
    match stem {
        "lib" if dirs.is_empty() => {}
        "main" if dirs.is_empty() => {
            if has_lib {
                return None;
            }
        }
        "mod" => {}
        stem => module.push(stem.to_owned()),
    }
    Some(module)
}

// ---------------------------------------------------------------------------
// Scanning a file
// ---------------------------------------------------------------------------

/// A token of Rust source, as far as paths need.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// An identifier or keyword (`r#` kept on raw identifiers).
    Ident(String),
    /// `::`
    PathSep,
    /// `{`
    Open,
    /// `}`
    Close,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `*`
    Star,
    /// Any other character (a number is one `0`).
    Punct(char),
}

/// Whether `token` is the identifier `word`.
fn is_word(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Ident(ident)) if ident == word)
}

/// Reads the `use` items, code paths and top-level item names of a file of module
/// `module`.
fn scan_file(module: &[String], text: &str) -> FileScan {
    let tokens = tokenize(&strip_comments_and_literals(text));
    let mut scan = FileScan::default();
    // One entry per open brace: the name of an inline module, or `None` for any other
    // block.
    let mut braces: Vec<Option<String>> = Vec::new();
    let scope = |braces: &[Option<String>]| {
        let mut scope = module.to_vec();
        scope.extend(braces.iter().flatten().cloned());
        scope
    };
    let mut at = 0;
    while at < tokens.len() {
        let next = tokens.get(at + 1);
        match &tokens[at] {
            Token::Ident(word) if word == "use" && next != Some(&Token::Punct('<')) => {
                let (leaves, end) = parse_use_item(&tokens, at + 1);
                for (segments, binding, glob) in leaves {
                    scan.uses.push(UseLeaf {
                        scope: scope(&braces),
                        segments,
                        binding,
                        glob,
                        top_level: braces.is_empty(),
                    });
                }
                at = end;
                continue;
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Open)) = (next, tokens.get(at + 2)) {
                    braces.push(Some(name.clone()));
                    at += 3;
                    continue;
                }
            }
            Token::Ident(word)
                if braces.is_empty()
                    && (ITEM_KEYWORDS.contains(&word.as_str())
                        || (word == "macro_rules" && next == Some(&Token::Punct('!')))) =>
            {
                let name = if word == "macro_rules" {
                    tokens.get(at + 2)
                } else {
                    next
                };
                if let Some(Token::Ident(name)) = name {
                    scan.items.insert(name.clone());
                }
            }
            Token::Ident(first) if starts_code_path(&tokens, at) => {
                let mut segments = vec![first.clone()];
                let mut end = at + 1;
                while let (Some(Token::PathSep), Some(Token::Ident(segment))) =
                    (tokens.get(end), tokens.get(end + 1))
                {
                    segments.push(segment.clone());
                    end += 2;
                }
                scan.paths.push(CodePath {
                    scope: scope(&braces),
                    segments,
                });
                at = end;
                continue;
            }
            Token::Open => braces.push(None),
            Token::Close => {
                braces.pop();
            }
            _ => {}
        }
        at += 1;
    }
    scan
}

/// Whether the identifier at `at` begins a path of two or more segments in code: it is
/// followed by `::` and an identifier, is not itself after `::`, and is not the scope of
/// a `pub(in path)` visibility.
fn starts_code_path(tokens: &[Token], at: usize) -> bool {
    let before = |back: usize| at.checked_sub(back).and_then(|index| tokens.get(index));
    matches!(tokens.get(at + 1), Some(Token::PathSep))
        && matches!(tokens.get(at + 2), Some(Token::Ident(_)))
        && before(1) != Some(&Token::PathSep)
        && !(is_word(before(1), "in") && before(2) == Some(&Token::Punct('(')))
}

/// A leaf of a `use` item: its segments, the name it binds and whether it is a glob.
type Leaf = (Vec<String>, Option<String>, bool);

/// Parses the `use` item whose tree starts at `start` (just after `use`). Returns its
/// leaves (none if the item does not parse) and the index just after its `;`.
fn parse_use_item(tokens: &[Token], start: usize) -> (Vec<Leaf>, usize) {
    let mut leaves = Vec::new();
    let mut at = start;
    let parsed = parse_use_tree(tokens, &mut at, Vec::new(), 0, &mut leaves);
    let end = tokens[at.min(tokens.len())..]
        .iter()
        .position(|token| *token == Token::Semi)
        .map_or(tokens.len(), |offset| at + offset + 1);
    if parsed && tokens.get(at) == Some(&Token::Semi) {
        (leaves, end)
    } else {
        (Vec::new(), end)
    }
}

/// Parses one use tree at `*at` under `prefix`, pushing its leaves; `false` if it does
/// not parse.
fn parse_use_tree(
    tokens: &[Token],
    at: &mut usize,
    mut path: Vec<String>,
    depth: usize,
    leaves: &mut Vec<Leaf>,
) -> bool {
    if depth > MAX_GROUP_DEPTH {
        return false;
    }
    if tokens.get(*at) == Some(&Token::PathSep) {
        // `use ::name` names an extern crate; mark the path so it resolves to nothing.
        if path.is_empty() {
            path.push("::".to_owned());
        }
        *at += 1;
    }
    loop {
        match tokens.get(*at) {
            // `$crate` in a macro body names the defining crate.
            Some(Token::Punct('$')) if is_word(tokens.get(*at + 1), "crate") => *at += 1,
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                *at += 1;
                if tokens.get(*at) == Some(&Token::PathSep) {
                    *at += 1;
                    continue;
                }
                let alias = if is_word(tokens.get(*at), "as") {
                    let Some(Token::Ident(alias)) = tokens.get(*at + 1) else {
                        return false;
                    };
                    *at += 2;
                    Some(alias.clone())
                } else {
                    None
                };
                if path.last().is_some_and(|last| last == "self") {
                    path.pop();
                }
                let Some(last) = path.last() else {
                    return false;
                };
                let binding = match alias {
                    Some(alias) if alias == "_" => None,
                    Some(alias) => Some(alias),
                    None => Some(last.clone()),
                };
                leaves.push((path, binding, false));
                return true;
            }
            Some(Token::Star) => {
                *at += 1;
                leaves.push((path, None, true));
                return true;
            }
            Some(Token::Open) => {
                *at += 1;
                loop {
                    if tokens.get(*at) == Some(&Token::Close) {
                        *at += 1;
                        return true;
                    }
                    if !parse_use_tree(tokens, at, path.clone(), depth + 1, leaves) {
                        return false;
                    }
                    match tokens.get(*at) {
                        Some(Token::Comma) => *at += 1,
                        Some(Token::Close) => {
                            *at += 1;
                            return true;
                        }
                        _ => return false,
                    }
                }
            }
            _ => return false,
        }
    }
}

/// Whether `c` may begin an identifier.
fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

/// Whether `c` may continue an identifier.
fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Splits comment- and literal-free source into [`Token`]s.
fn tokenize(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        if c.is_whitespace() {
            at += 1;
        } else if is_ident_start(c) {
            let start = at;
            at += 1;
            if c == 'r'
                && next == Some('#')
                && chars.get(at + 1).is_some_and(|&c| is_ident_start(c))
            {
                at += 1;
            }
            while chars.get(at).is_some_and(|&c| is_ident_continue(c)) {
                at += 1;
            }
            tokens.push(Token::Ident(chars[start..at].iter().collect()));
        } else if c.is_ascii_digit() {
            while chars.get(at).is_some_and(|&c| is_ident_continue(c)) {
                at += 1;
            }
            tokens.push(Token::Punct('0'));
        } else if c == ':' && next == Some(':') {
            at += 2;
            tokens.push(Token::PathSep);
        } else {
            at += 1;
            tokens.push(match c {
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                ';' => Token::Semi,
                '*' => Token::Star,
                other => Token::Punct(other),
            });
        }
    }
    tokens
}

/// `text` with every comment and every string, byte-string, raw-string and character
/// literal replaced by one space, so that nothing in them reads as a path.
fn strip_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            // Up to the newline, which is kept.
            while chars.get(at).is_some_and(|&c| c != '\n') {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            at = block_comment_end(&chars, at);
            out.push(' ');
        } else if c == '"' {
            at = string_end(&chars, at + 1);
            out.push(' ');
        } else if c == '\'' {
            match char_literal_end(&chars, at) {
                Some(end) => {
                    at = end;
                    out.push(' ');
                }
                None => {
                    out.push(c);
                    at += 1;
                }
            }
        } else if is_ident_start(c) {
            if let Some(end) = raw_string_end(&chars, at) {
                at = end;
                out.push(' ');
            } else {
                let start = at;
                while chars.get(at).is_some_and(|&c| is_ident_continue(c)) {
                    at += 1;
                }
                out.extend(&chars[start..at]);
            }
        } else {
            out.push(c);
            at += 1;
        }
    }
    out
}

/// The index just after the (possibly nested) block comment opening at `start`.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0_usize;
    let mut at = start;
    while let Some(&c) = chars.get(at) {
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('*') {
            depth += 1;
            at += 2;
        } else if c == '*' && next == Some('/') {
            depth = depth.saturating_sub(1);
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    chars.len()
}

/// The index just after the `"` closing a string whose text starts at `start`.
fn string_end(chars: &[char], start: usize) -> usize {
    let mut at = start;
    while let Some(&c) = chars.get(at) {
        match c {
            '\\' => at += 2,
            '"' => return at + 1,
            _ => at += 1,
        }
    }
    chars.len()
}

/// The index just after a character literal opening at `start` (a `'`), or `None` if
/// the `'` begins a lifetime or label.
fn char_literal_end(chars: &[char], start: usize) -> Option<usize> {
    match chars.get(start + 1) {
        // `'\n'`, `'\''`, `'\u{1F600}'`: the closing quote comes after the escaped char.
        Some('\\') => (start + 3..chars.len().min(start + 14))
            .find(|&at| chars[at] == '\'')
            .map(|at| at + 1),
        Some('\'') | None => None,
        Some(_) => (chars.get(start + 2) == Some(&'\'')).then_some(start + 3),
    }
}

/// If a raw string literal (`r"…"`, `r#"…"#`, `br"…"`, `cr#"…"#`) opens at `start`, the
/// index just after it.
fn raw_string_end(chars: &[char], start: usize) -> Option<usize> {
    let mut at = start;
    if matches!(chars.get(at), Some('b' | 'c')) {
        at += 1;
    }
    if chars.get(at) != Some(&'r') {
        return None;
    }
    at += 1;
    let hashes = chars[at..].iter().take_while(|&&c| c == '#').count();
    at += hashes;
    if chars.get(at) != Some(&'"') {
        return None;
    }
    at += 1;
    while let Some(&c) = chars.get(at) {
        at += 1;
        if c == '"' && chars[at..].iter().take_while(|&&c| c == '#').count() >= hashes {
            return Some(at + hashes);
        }
    }
    Some(chars.len())
}

// ---------------------------------------------------------------------------
// Strongly connected components
// ---------------------------------------------------------------------------

/// The strongly connected components of the graph `adjacency` (node → successors), by
/// Tarjan's algorithm.
fn strongly_connected(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    /// Tarjan's bookkeeping.
    struct Tarjan<'a> {
        /// The graph.
        adjacency: &'a [Vec<usize>],
        /// Visit order of each node, once visited.
        order: Vec<Option<usize>>,
        /// Lowest visit order reachable from each node through its subtree.
        low: Vec<usize>,
        /// Whether each node is on `stack`.
        on_stack: Vec<bool>,
        /// Nodes visited whose component is not yet complete.
        stack: Vec<usize>,
        /// The next visit order.
        next: usize,
        /// Completed components.
        components: Vec<Vec<usize>>,
    }

    impl Tarjan<'_> {
        /// Visits `node` and everything reachable from it.
        fn visit(&mut self, node: usize) {
            self.order[node] = Some(self.next);
            self.low[node] = self.next;
            self.next += 1;
            self.stack.push(node);
            self.on_stack[node] = true;
            for &successor in &self.adjacency[node] {
                match self.order[successor] {
                    None => {
                        self.visit(successor);
                        self.low[node] = self.low[node].min(self.low[successor]);
                    }
                    Some(order) if self.on_stack[successor] => {
                        self.low[node] = self.low[node].min(order);
                    }
                    Some(_) => {}
                }
            }
            if Some(self.low[node]) == self.order[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }

    let nodes = adjacency.len();
    let mut tarjan = Tarjan {
        adjacency,
        order: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for node in 0..nodes {
        if tarjan.order[node].is_none() {
            tarjan.visit(node);
        }
    }
    tarjan.components
}
