//! Parsing tasks.md text into [`Task`]s, in one pass over its lines; the accepted format
//! is documented on [`parse_tasks`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::prompt::key_at;
use crate::task::{Spanner, Text};
use crate::{Diagnostic, Task, TaskStatus};

/// Parses tasks.md text: the tasks in file order and the diagnostics, in one pass over
/// the lines (time linear in the size of the text).
///
/// Never panics; a line it cannot use is skipped, with a [`Diagnostic`] when it looks
/// like a task or loses prompt text.
///
/// # Task lines
///
/// A task is a `-` or `*` bullet with a checkbox (`[ ]` pending, `[-]` in progress, `[x]`
/// or `[X]` completed), a numeric id and a title: `- [x] 1. Title`, `* [ ] 2.3 Title`,
/// `- [-] 3.4.1. Title`, `- [ ] 4\. Title`. The id is kept as its canonical reference,
/// digits and dots only (`1`, `2.3`, `3.4.1`): a trailing `.` and the markdown escape
/// `\.` are dropped. A checkbox bullet without such an id is not a task: it yields a
/// [`Diagnostic`] (and, under a task, also stays one of its details).
///
/// **Near misses.** A line that has a numeric id after a checkbox-like box but is not a
/// task line yields a [`Diagnostic`] naming every problem and the accepted form of the
/// line, instead of being taken for a detail or dropped:
///
/// | line | problem |
/// |---|---|
/// | `[ ] 1. Title` | no bullet |
/// | `+ [ ] 2. Title` | a `+` bullet |
/// | `1. [ ] 3. Title`, `1) [ ] 3. Title` | a numbered bullet |
/// | `-[ ] 4. Title` | no blank after the bullet |
/// | `- [~] 5. Title`, `- [] 5.`, `- [ x] 5.` | an unknown box (one of at most two characters) |
/// | `- [ ]6. Title` | no blank after the box |
///
/// The line and every line under it, up to the next task line, belong to no task: its
/// metadata is not added to the task above (a `_Prompt:` under it is still read to its
/// end, so its lines stay prompt text). Lines without an id after the box (`+ [ ] Note`,
/// `- [link](…)`, `- [ref] 2.` with a longer box) and quoted lines (`> - [ ] 1.`) are not
/// near misses.
///
/// **Depth.** The indentation of a task line is its leading spaces and tabs, a space
/// counting 1 column and a tab 2. The depth is the indentation minus that of the
/// least-indented task line of the file, divided by 2 and rounded down: 2 spaces or 1 tab
/// per level, so the outermost tasks are at depth 0 even when the whole list is indented.
///
/// # Metadata
///
/// Every line after a task line, up to the next task line, belongs to that task. A line is
/// read after its indentation and an optional `-`/`*` bullet:
///
/// - `_Requirements: 1.1, 2_`: comma-separated ids, trimmed, added to
///   [`Task::requirements`];
/// - `_Leverage: …_`: text, [`Task::leverage`];
/// - `File: …` / `Files: …`: comma-separated paths, [`Task::files`]. A path written in
///   backticks is taken from them; otherwise backticks are stripped and a trailing
///   parenthesized note (`src/a.ts (new)`) is dropped. Commas inside parentheses or
///   backticks do not separate paths;
/// - `Purpose: …`: text, [`Task::purpose`];
/// - `_Prompt: …_`: the prompt, see below;
/// - any other bullet, including unknown `_Key: …_` metadata: its text (without the
///   bullet) is an implementation detail, [`Task::details`]. A prose line right after a
///   detail bullet and indented deeper than that bullet continues the detail; other prose
///   lines are skipped.
///
/// The underscores around `Requirements`, `Leverage`, `File(s)` and `Purpose` are optional;
/// `_Prompt:` needs its leading underscore, since its closing `_` is what ends a multi-line
/// prompt. When a key is repeated, lists are extended and texts joined with `; `.
/// Everything before the first task (a `# Tasks: …` title, prose, stray metadata) is
/// ignored without diagnostics, except checkbox bullets without an id and near misses.
///
/// # Prompts
///
/// A prompt starts at `_Prompt:` and ends at the first line (that one included) whose text
/// ends with `_`, the closing underscore. It may be one line (`_Prompt: … _`), a `|` block
/// (`_Prompt: |` then indented lines, blank lines between paragraphs included), or text
/// after `_Prompt:` continuing on the following lines. The prompt text is everything
/// between `_Prompt:` and the closing `_`, with the `|` marker dropped, the common
/// indentation of the lines after the first removed, trailing whitespace of each line
/// removed, blank lines kept, and the whole trimmed. A prompt still open at the next task
/// line or at the end of the file keeps what was read and yields a diagnostic; lines inside
/// a prompt are prompt text, never metadata, details or diagnostics.
///
/// **Sections.** The prompt is cut into pieces at ` | `, at a `|` that starts or ends a
/// line, at the start of a paragraph (a line after a blank line), and at the start of a
/// line beginning with one of the usual keys `Role:`, `Task:`, `Restrictions:`,
/// `Success:`, `Instructions:`. A piece matching `^\s*([A-Z][A-Za-z ]{0,30}):\s*(.*)` opens
/// a section (key, value). A piece that matches nothing continues the open section
/// (the separator is part of the text, as in `'a' | 'b'` or a second paragraph): a
/// section's value is the prompt text from after its `Key:` to the end of its last piece,
/// trimmed. A piece that echoes task metadata (`_Leverage: …`, `_Requirements: …`) closes
/// the open section and belongs to none. Text before the first key, such as `Implement the
/// task for spec X, first call …:`, is not a section; the first key may follow it in the
/// same piece after a `: `.
///
/// # Diagnostics
///
/// A checkbox bullet without a numeric id, a near miss (see above), a prompt not closed
/// before the next task or the end of the file, a task id already used, and a second
/// `_Prompt:` under one task (its text is appended to the first) each yield a
/// [`Diagnostic`] with its 1-based line. A near miss's message starts with `not a task:`
/// and ends with the accepted form, as in `` not a task: unknown checkbox `[~]` (`[ ]`
/// pending, `[-]` in progress, `[x]` completed). Accepted form: `- [ ] 5. Title` ``.
///
/// # Example
///
/// ```
/// use ledger::{TaskStatus, parse_tasks};
///
/// let text = "# Tasks: Example
///
/// - [x] 1. Parse the file
///   - File: `src/parse.rs`
///   - _Requirements: 1.1, 2_
///   - _Prompt: |
///       Implement the task:
///
///       Role: Rust Developer
///
///       Task: Parse tasks.md._
/// - [ ] 1.1 Test it
/// - [ ] Write the docs
/// ";
/// let (tasks, diagnostics) = parse_tasks(text);
/// assert_eq!(tasks.len(), 2);
/// let first = &tasks[0];
/// assert_eq!((first.id(), first.title()), ("1", "Parse the file"));
/// assert_eq!(first.status(), TaskStatus::Completed);
/// assert_eq!(first.files(), ["src/parse.rs"]);
/// assert_eq!(first.requirements(), ["1.1", "2"]);
/// // The whole prompt, blank lines included, without the `|` marker and the closing `_`.
/// assert_eq!(
///     first.prompt(),
///     Some("Implement the task:\n\nRole: Rust Developer\n\nTask: Parse tasks.md."),
/// );
/// assert_eq!(first.prompt_section("Role"), Some("Rust Developer"));
/// assert_eq!(first.prompt_section("Task"), Some("Parse tasks.md."));
/// // `1.1` is not indented: depth 0. Lines are 1-based.
/// assert_eq!((tasks[1].id(), tasks[1].depth(), tasks[1].line()), ("1.1", 0, 12));
/// // The last checkbox has no id: not a task, a diagnostic on its line.
/// assert_eq!(diagnostics.len(), 1);
/// assert_eq!(diagnostics[0].line, 13);
/// ```
#[must_use]
pub fn parse_tasks(text: &str) -> (Vec<Task>, Vec<Diagnostic>) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // One shared copy of the text: tasks hold spans of it instead of copies of their parts.
    let source: Arc<str> = Arc::from(text);
    let view: &str = &source;
    let mut parser = Parser {
        spanner: Spanner::new(view),
        source: source.clone(),
        ..Parser::default()
    };
    for (index, line) in view.lines().enumerate() {
        parser.line(index + 1, line);
    }
    parser.finish()
}

/// A task line, split.
struct TaskLine<'a> {
    indent: usize,
    status: TaskStatus,
    /// The checkbox as written, `[x]`: a slice of the line.
    checkbox: &'a str,
    /// Borrowed when the id is written as is; owned when it had to be unescaped.
    id: Cow<'a, str>,
    title: &'a str,
}

/// What a line is, as far as task lines go.
enum LineKind<'a> {
    Task(TaskLine<'a>),
    /// A checkbox bullet without a numeric id; the bullet's text.
    CheckboxWithoutId(&'a str),
    /// Almost a task line.
    NearMiss(NearMiss<'a>),
    Other,
}

/// A line shaped like a task line with a numeric id, but with a wrong bullet or checkbox.
struct NearMiss<'a> {
    /// What is wrong, at least one.
    problems: Vec<Problem<'a>>,
    /// `*` when the line used it, else `-`: the bullet of the accepted form.
    bullet: char,
    /// The box's marker when it is a known one, for the accepted form.
    status: Option<TaskStatus>,
    /// The id as written (`8.`, `2.3`, `3\.`) and the title.
    id: &'a str,
    title: &'a str,
}

/// One thing that keeps a [`NearMiss`] from being a task line.
enum Problem<'a> {
    /// A checkbox with no bullet before it.
    NoBullet,
    /// A bullet other than `-` or `*`: `+`.
    WrongBullet(&'a str),
    /// An ordered-list marker: `1.`, `2)`.
    NumberedBullet(&'a str),
    /// `-[ ]`: the bullet glued to the box.
    NoBlankAfterBullet(char),
    /// A box that is not `[ ]`, `[-]`, `[x]` or `[X]`; the box as written.
    UnknownBox(&'a str),
    /// `[ ]9.`: the box glued to the id; the box as written.
    NoBlankAfterBox(&'a str),
}

impl NearMiss<'_> {
    /// The diagnostic's message: every problem, then the accepted form of the line.
    fn message(&self) -> String {
        const BULLETS: &str = "(a task starts with `-` or `*`)";
        let mut message = String::from("not a task: ");
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                message.push_str("; ");
            }
            let text = match problem {
                Problem::NoBullet => format!("no bullet {BULLETS}"),
                Problem::WrongBullet(bullet) => format!("`{bullet}` bullet {BULLETS}"),
                Problem::NumberedBullet(bullet) => format!("numbered bullet `{bullet}` {BULLETS}"),
                Problem::NoBlankAfterBullet(bullet) => {
                    format!("no blank after the bullet `{bullet}`")
                }
                Problem::UnknownBox(checkbox) => format!(
                    "unknown checkbox `{checkbox}` (`[ ]` pending, `[-]` in progress, `[x]` \
                     completed)"
                ),
                Problem::NoBlankAfterBox(checkbox) => {
                    format!("no blank after the checkbox `{checkbox}`")
                }
            };
            message.push_str(&text);
        }
        let marker = self.status.unwrap_or(TaskStatus::Pending).marker();
        let title = fact_model::clip(self.title, 60);
        let (bullet, id) = (self.bullet, self.id);
        let sep = if title.is_empty() { "" } else { " " };
        message.push_str(&format!(
            ". Accepted form: `{bullet} [{marker}] {id}{sep}{title}`"
        ));
        message
    }
}

/// A prompt being read: its `_Prompt:` line and the raw lines, the first one being the
/// text after `_Prompt:`.
struct OpenPrompt<'a> {
    line: usize,
    /// The text after `_Prompt:` on its own line.
    first: &'a str,
    /// The lines after it (none for a one-line prompt, so it allocates nothing).
    more: Vec<&'a str>,
    /// A prompt under a near miss: read to its end so its lines stay prompt text, then
    /// dropped.
    discard: bool,
}

/// How a prompt ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PromptEnd {
    /// At its closing `_`.
    Closed,
    /// Cut by the task line at this line.
    Task(usize),
    /// Cut by the end of the file.
    Eof,
}

/// The state of the one pass.
#[derive(Default)]
struct Parser<'a> {
    source: Arc<str>,
    spanner: Spanner,
    tasks: Vec<Task>,
    /// The indentation width of each task line, for the depths computed at the end.
    indents: Vec<usize>,
    diagnostics: Vec<Diagnostic>,
    /// The line of each task id seen, for duplicates.
    seen: HashMap<Cow<'a, str>, usize>,
    prompt: Option<OpenPrompt<'a>>,
    /// The indentation of the bullet detail on the previous line, which a more indented
    /// prose line continues.
    detail_indent: Option<usize>,
    /// After a near miss, up to the next task line: the lines belong to no task.
    skipping: bool,
}

impl<'a> Parser<'a> {
    fn line(&mut self, number: usize, raw: &'a str) {
        let kind = classify(raw);
        if let Some(mut open) = self.prompt.take() {
            if let LineKind::Task(_) = kind {
                self.end_prompt(open, PromptEnd::Task(number));
            } else {
                open.more.push(raw);
                if raw.trim_end().ends_with('_') {
                    self.end_prompt(open, PromptEnd::Closed);
                } else {
                    self.prompt = Some(open);
                }
                return;
            }
        }
        match kind {
            LineKind::Task(task) => self.start_task(number, task),
            LineKind::CheckboxWithoutId(text) => {
                self.diagnostics.push(Diagnostic {
                    line: number,
                    // Clipped: a diagnostic names the line, it does not copy a 10 MB one.
                    message: format!(
                        "checkbox without a numeric task id, not a task: {}",
                        fact_model::clip(text, 120)
                    ),
                });
                let sp = self.spanner;
                if !self.skipping
                    && let Some(task) = self.tasks.last_mut()
                {
                    task.details.push(sp.text(text));
                    self.detail_indent = Some(split_indent(raw).0);
                }
            }
            LineKind::NearMiss(near_miss) => {
                self.diagnostics.push(Diagnostic {
                    line: number,
                    message: near_miss.message(),
                });
                self.skipping = true;
                self.detail_indent = None;
            }
            LineKind::Other => self.metadata(number, raw),
        }
    }

    fn start_task(&mut self, number: usize, line: TaskLine<'a>) {
        if let Some(first) = self.seen.get(&line.id) {
            self.diagnostics.push(Diagnostic {
                line: number,
                message: format!("duplicate task id {} (first at line {first})", line.id),
            });
        } else {
            self.seen.insert(line.id.clone(), number);
        }
        self.indents.push(line.indent);
        self.skipping = false;
        let id = match line.id {
            Cow::Borrowed(id) => self.spanner.text(id),
            Cow::Owned(id) => Text::Owned(id.into()),
        };
        self.tasks.push(Task {
            source: self.source.clone(),
            id,
            title: self.spanner.text(line.title),
            status: line.status,
            marker: self.spanner.offset(line.checkbox).map_or(0, |at| at + 1),
            depth: 0,
            line: number,
            requirements: Vec::new(),
            leverage: None,
            files: Vec::new(),
            purpose: None,
            details: Vec::new(),
            prompt: None,
        });
        self.detail_indent = None;
    }

    /// A line under a task that is neither a task nor a checkbox.
    fn metadata(&mut self, number: usize, raw: &'a str) {
        let detail_indent = self.detail_indent.take();
        let sp = self.spanner;
        let (indent, body) = split_indent(raw);
        let body = body.trim_end();
        let bullet = strip_bullet(body);
        let content = bullet.unwrap_or(body);
        if self.tasks.is_empty() || body.is_empty() {
            return;
        }
        if let Some(rest) = content.strip_prefix("_Prompt:") {
            let open = OpenPrompt {
                line: number,
                first: rest,
                more: Vec::new(),
                discard: self.skipping,
            };
            if rest.trim_end().ends_with('_') {
                self.end_prompt(open, PromptEnd::Closed);
            } else {
                self.prompt = Some(open);
            }
            return;
        }
        let Some(task) = self.tasks.last_mut().filter(|_| !self.skipping) else {
            return;
        };
        if let Some(value) = known_value(content, &["Requirements"]) {
            split_list(value, |item| task.requirements.push(sp.text(item)));
        } else if let Some(value) = known_value(content, &["Leverage"]) {
            task.leverage = appended(task, task.leverage.as_ref(), value, sp);
        } else if let Some(value) = known_value(content, &["Files", "File"]) {
            split_list(value, |item| {
                task.files.extend(clean_path(item).map(|path| match path {
                    Cow::Borrowed(path) => sp.text(path),
                    Cow::Owned(path) => Text::Owned(path.into()),
                }));
            });
        } else if let Some(value) = known_value(content, &["Purpose"]) {
            task.purpose = appended(task, task.purpose.as_ref(), value, sp);
        } else if let Some(text) = bullet {
            task.details.push(sp.text(text));
            self.detail_indent = Some(indent);
        } else if content.starts_with('_') && key_at(content.get(1..).unwrap_or("")).is_some() {
            // Unknown `_Key: …_` metadata written without a bullet.
            task.details.push(sp.text(content));
        } else if let Some(detail_indent) = detail_indent.filter(|&bullet| indent > bullet)
            && let Some(last) = task.details.last()
        {
            let joined: Box<str> = format!("{} {content}", task.resolve(last)).into();
            if let Some(last) = task.details.last_mut() {
                *last = Text::Owned(joined);
            }
            self.detail_indent = Some(detail_indent);
        }
    }

    /// Stores a prompt read to its closing `_` or cut by a task line or the end.
    fn end_prompt(&mut self, open: OpenPrompt<'_>, end: PromptEnd) {
        if open.discard {
            return;
        }
        let text = match prompt_text(open.first, &open.more, end == PromptEnd::Closed) {
            Cow::Borrowed(text) => self.spanner.text(text),
            Cow::Owned(text) => Text::Owned(text.into()),
        };
        let Some(task) = self.tasks.last_mut() else {
            return;
        };
        let cut_by = match end {
            PromptEnd::Closed => None,
            PromptEnd::Task(line) => Some(format!("the next task (line {line})")),
            PromptEnd::Eof => Some("the end of the file".to_owned()),
        };
        if let Some(cut_by) = cut_by {
            self.diagnostics.push(Diagnostic {
                line: open.line,
                message: format!(
                    "prompt of task {} is not closed with `_` before {cut_by}; kept the {} \
                     line(s) read",
                    task.id(),
                    open.more.len() + 1
                ),
            });
        }
        let prompt = match task.prompt.take() {
            Some(first) => {
                self.diagnostics.push(Diagnostic {
                    line: open.line,
                    message: format!(
                        "second `_Prompt:` under task {}, appended to the first",
                        task.id()
                    ),
                });
                let joined = format!("{}\n\n{}", task.resolve(&first), task.resolve(&text));
                Text::Owned(joined.into())
            }
            None => text,
        };
        task.prompt = Some(prompt);
    }

    fn finish(mut self) -> (Vec<Task>, Vec<Diagnostic>) {
        if let Some(open) = self.prompt.take() {
            self.end_prompt(open, PromptEnd::Eof);
        }
        let least = self.indents.iter().copied().min().unwrap_or(0);
        for (task, indent) in self.tasks.iter_mut().zip(&self.indents) {
            task.depth = indent.saturating_sub(least) / 2;
        }
        (self.tasks, self.diagnostics)
    }
}

/// The indentation width (space 1, tab 2) and the rest of the line.
fn split_indent(line: &str) -> (usize, &str) {
    let rest = line.trim_start_matches([' ', '\t']);
    let lead = line.len().saturating_sub(rest.len());
    let width = line.get(..lead).map_or(0, |ws| {
        ws.chars().map(|c| if c == '\t' { 2 } else { 1 }).sum()
    });
    (width, rest)
}

/// The text of a `-` or `*` bullet (marker followed by a space or tab).
fn strip_bullet(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('-').or_else(|| text.strip_prefix('*'))?;
    let after = rest.trim_start_matches([' ', '\t']);
    (after.len() < rest.len()).then_some(after)
}

fn classify(raw: &str) -> LineKind<'_> {
    let (indent, body) = split_indent(raw);
    let body = body.trim_end();
    let other = || near_miss(body).map_or(LineKind::Other, LineKind::NearMiss);
    let Some(bullet) = strip_bullet(body) else {
        return other();
    };
    let Some((status, rest)) = strip_checkbox(bullet) else {
        return other();
    };
    match parse_id(rest) {
        Some((id, title)) => {
            // Borrow the id when it is written as is (no `\.` escape inside).
            let written = rest.trim_start();
            let id = match written.get(..id.len()) {
                Some(prefix) if prefix == id => Cow::Borrowed(prefix),
                _ => Cow::Owned(id),
            };
            LineKind::Task(TaskLine {
                indent,
                status,
                checkbox: bullet.get(..3).unwrap_or_default(),
                id,
                title,
            })
        }
        None => LineKind::CheckboxWithoutId(bullet),
    }
}

/// The near miss `body` (a line without its indentation) is, if it is one: a line with a
/// bullet or number, a box of at most two characters and a numeric id, that is not a task
/// line. Called only for lines that are neither tasks nor checkboxes without an id.
fn near_miss(body: &str) -> Option<NearMiss<'_>> {
    let mut problems = Vec::new();
    let mut bullet = '-';
    let blank = |c: char| c == ' ' || c == '\t';
    let first = body.chars().next()?;
    let rest = match first {
        '-' | '*' => {
            let after = body.get(1..)?;
            if after.starts_with('[') {
                problems.push(Problem::NoBlankAfterBullet(first));
            } else if !after.starts_with(blank) {
                return None;
            }
            bullet = first;
            after.trim_start_matches(blank)
        }
        '+' => {
            let after = body.get(1..)?;
            if !after.starts_with(blank) {
                return None;
            }
            problems.push(Problem::WrongBullet(body.get(..1)?));
            after.trim_start_matches(blank)
        }
        '[' => {
            problems.push(Problem::NoBullet);
            body
        }
        '0'..='9' => {
            let digits = body.bytes().take_while(u8::is_ascii_digit).count();
            let after = body.get(digits..)?;
            let after = after
                .strip_prefix('.')
                .or_else(|| after.strip_prefix(')'))?;
            if !after.starts_with(blank) {
                return None;
            }
            problems.push(Problem::NumberedBullet(body.get(..=digits)?));
            after.trim_start_matches(blank)
        }
        _ => return None,
    };
    // A box of zero to two characters (no brackets inside), then the id.
    let inside = rest.strip_prefix('[')?;
    let close = inside
        .char_indices()
        .take(3)
        .find(|&(_, c)| c == ']' || c == '[');
    let (close, _) = close.filter(|&(_, c)| c == ']')?;
    let checkbox = rest.get(..close + 2)?;
    let after_box = inside.get(close + 1..)?;
    let status = match inside.get(..close)? {
        " " => Some(TaskStatus::Pending),
        "-" => Some(TaskStatus::InProgress),
        "x" | "X" => Some(TaskStatus::Completed),
        _ => None,
    };
    if status.is_none() {
        problems.push(Problem::UnknownBox(checkbox));
    }
    let id_text = if after_box.starts_with(blank) {
        after_box.trim_start_matches(blank)
    } else if after_box.starts_with(|c: char| c.is_ascii_digit()) {
        problems.push(Problem::NoBlankAfterBox(checkbox));
        after_box
    } else {
        return None;
    };
    let (_, title) = parse_id(id_text)?;
    let id = id_text.split([' ', '\t']).next().unwrap_or(id_text);
    (!problems.is_empty()).then_some(NearMiss {
        problems,
        bullet,
        status,
        id,
        title,
    })
}

/// The checkbox state and the text after it; the box must be followed by a blank or
/// end the line.
fn strip_checkbox(text: &str) -> Option<(TaskStatus, &str)> {
    let boxes = [
        ("[ ]", TaskStatus::Pending),
        ("[-]", TaskStatus::InProgress),
        ("[x]", TaskStatus::Completed),
        ("[X]", TaskStatus::Completed),
    ];
    let (rest, status) = boxes
        .iter()
        .find_map(|(mark, status)| text.strip_prefix(mark).map(|rest| (rest, *status)))?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| (status, rest.trim_start()))
}

/// A numeric id (`1`, `1.`, `1\.`, `2.3`, `3.4.1.`) followed by a blank or the end, as
/// its canonical form and the trimmed title after it.
fn parse_id(text: &str) -> Option<(String, &str)> {
    let mut id = String::new();
    let mut rest = text;
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        id.push_str(rest.get(..digits)?);
        rest = rest.get(digits..)?;
        match rest.strip_prefix("\\.").or_else(|| rest.strip_prefix('.')) {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => {
                id.push('.');
                rest = after;
            }
            Some(after) => {
                rest = after;
                break;
            }
            None => break,
        }
    }
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| (id, rest.trim()))
}

/// The value of `Key: value` or `_Key: value_` for one of `keys`, trimmed, without the
/// closing underscore of the wrapped form.
fn known_value<'t>(content: &'t str, keys: &[&str]) -> Option<&'t str> {
    let (wrapped, text) = match content.strip_prefix('_') {
        Some(rest) => (true, rest),
        None => (false, content),
    };
    let value = keys.iter().find_map(|key| {
        text.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
    })?;
    let value = value.trim();
    Some(if wrapped {
        value.strip_suffix('_').unwrap_or(value).trim_end()
    } else {
        value
    })
}

/// `value` as the new text of a slot holding `current`: the value itself, or appended
/// after `; `; an empty value changes nothing.
fn appended(task: &Task, current: Option<&Text>, value: &str, sp: Spanner) -> Option<Text> {
    if value.is_empty() {
        return current.cloned();
    }
    Some(match current {
        Some(text) => Text::Owned(format!("{}; {value}", task.resolve(text)).into()),
        None => sp.text(value),
    })
}

/// The comma-separated items of `text`, trimmed and non-empty; commas inside parentheses
/// or backticks do not separate.
fn split_list<'t>(text: &'t str, mut item: impl FnMut(&'t str)) {
    let mut emit = |piece: Option<&'t str>| {
        if let Some(piece) = piece.map(str::trim).filter(|p| !p.is_empty()) {
            item(piece);
        }
    };
    let mut depth = 0usize;
    let mut in_code = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '(' if !in_code => depth += 1,
            ')' if !in_code => depth = depth.saturating_sub(1),
            ',' if !in_code && depth == 0 => {
                emit(text.get(start..i));
                start = i + 1;
            }
            _ => {}
        }
    }
    emit(text.get(start..));
}

/// The path of one `Files:` item: the first backticked span if there is one, otherwise
/// the item without backticks and without a trailing ` (note)`.
fn clean_path(item: &str) -> Option<Cow<'_, str>> {
    if let Some((_, after)) = item.split_once('`')
        && let Some((inside, _)) = after.split_once('`')
        && !inside.trim().is_empty()
    {
        return Some(Cow::Borrowed(inside.trim()));
    }
    let drop_note = |path: &str| -> usize {
        match path.rsplit_once(" (") {
            Some((head, _)) if path.ends_with(')') && !head.trim().is_empty() => head.len(),
            _ => path.len(),
        }
    };
    if item.contains('`') {
        let unquoted = item.replace('`', "");
        let path = unquoted
            .get(..drop_note(&unquoted))
            .unwrap_or_default()
            .trim();
        return (!path.is_empty()).then(|| Cow::Owned(path.to_owned()));
    }
    let path = item.get(..drop_note(item)).unwrap_or_default().trim();
    (!path.is_empty()).then_some(Cow::Borrowed(path))
}

/// The number of leading spaces and tabs (bytes).
fn leading_blanks(line: &str) -> usize {
    line.len()
        .saturating_sub(line.trim_start_matches([' ', '\t']).len())
}

/// The prompt text from its raw lines (see the module documentation).
fn prompt_text<'t>(first: &'t str, more: &[&str], closed: bool) -> Cow<'t, str> {
    // The common case, a prompt on one line: a slice of the line.
    if more.is_empty() {
        let line = first;
        let line = line.trim();
        let line = if closed {
            line.strip_suffix('_').unwrap_or(line)
        } else {
            line
        };
        let line = line.trim();
        return Cow::Borrowed(if line == "|" { "" } else { line });
    }
    let count = more.len() + 1;
    let mut trimmed: Vec<&str> = std::iter::once(&first)
        .chain(more)
        .enumerate()
        .map(|(i, line)| {
            let line = line.trim_end();
            if closed && i + 1 == count {
                line.strip_suffix('_').unwrap_or(line).trim_end()
            } else {
                line
            }
        })
        .collect();
    if let Some(first) = trimmed.first_mut() {
        *first = first.trim();
        if *first == "|" {
            *first = "";
        }
    }
    let common = trimmed
        .iter()
        .skip(1)
        .filter(|line| !line.is_empty())
        .map(|line| leading_blanks(line))
        .min()
        .unwrap_or(0);
    let mut text = String::new();
    for (i, line) in trimmed.iter().enumerate() {
        if i > 0 {
            text.push('\n');
            text.push_str(line.get(common..).unwrap_or_else(|| line.trim_start()));
        } else {
            text.push_str(line);
        }
    }
    let trimmed = text.trim();
    Cow::Owned(if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    })
}
