//! `parse_tasks` on the eight real tasks.md files of `../shared/corpus/spec-context-specs`:
//! task counts, statuses, no diagnostics, and every prompt whole, checked against the raw
//! file text located independently; and no near-miss diagnostic in any tasks.md of the
//! corpus. Skipped (with a note on stderr) without the corpus, except under `CI=true`,
//! where the corpus is always present and its absence fails.

use std::path::{Path, PathBuf};

use ledger::{Task, TaskStatus, parse_tasks};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpus/spec-context-specs"
);

/// Each spec of the corpus with its number of tasks.
const SPECS: [(&str, usize); 8] = [
    ("discipline-workflow", 12),
    ("dispatch-prompt-prefix-stability", 5),
    ("dispatch-structured-output-tightening", 6),
    ("dispatch-task-progress-ledgers", 7),
    ("mcp-tool-result-caching", 5),
    ("observation-masking", 5),
    ("session-fact-tracker", 7),
    ("task-complexity-classifier", 6),
];

/// The corpus folder, or `None` (after a note on stderr) when it is absent; under
/// `CI=true` an absent corpus fails the test.
fn corpus_root() -> Option<&'static Path> {
    let root = Path::new(CORPUS);
    if root.is_dir() {
        return Some(root);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no corpus at {} under CI=true",
        root.display()
    );
    eprintln!("skipped: no corpus at {}", root.display());
    None
}

/// The spec names and texts, or `None` (after a note on stderr) without the corpus.
fn corpus() -> Option<Vec<(&'static str, usize, String)>> {
    let root = corpus_root()?;
    let files = SPECS.iter().map(|&(spec, count)| {
        let path: PathBuf = root.join(spec).join("tasks.md");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        (spec, count, text)
    });
    Some(files.collect())
}

/// All whitespace runs collapsed to one space, ends trimmed.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The raw prompt of the task at 1-based line `task_line`, found with plain string search:
/// the text after the first `_Prompt:` below the task line, up to the closing `_` at the
/// end of the first line that ends with one; the leading `|` marker dropped. Also
/// whether it is a `|` block, and the 0-based index of its `_Prompt:` line.
fn raw_prompt(lines: &[&str], task_line: usize) -> (String, bool, usize) {
    let start = (task_line..lines.len())
        .find(|&i| lines[i].contains("_Prompt:"))
        .unwrap_or_else(|| panic!("no _Prompt: below line {task_line}"));
    let first = lines[start].split_once("_Prompt:").unwrap().1;
    let mut collected = vec![first];
    if !first.trim_end().ends_with('_') {
        let closing = (start + 1..lines.len())
            .find(|&i| lines[i].trim_end().ends_with('_'))
            .unwrap_or_else(|| panic!("prompt at line {} never closed", start + 1));
        collected.extend(&lines[start + 1..=closing]);
    }
    let joined = collected.join("\n");
    let body = joined.trim_end().strip_suffix('_').unwrap();
    let block = first.trim() == "|";
    let body = if block {
        body.trim_start().strip_prefix('|').unwrap()
    } else {
        body
    };
    (body.to_owned(), block, start)
}

#[test]
fn corpus_task_counts_statuses_and_no_diagnostics() {
    let Some(files) = corpus() else { return };
    for (spec, count, text) in &files {
        let (tasks, diagnostics) = parse_tasks(text);
        assert!(diagnostics.is_empty(), "{spec}: {diagnostics:?}");
        assert_eq!(tasks.len(), *count, "{spec}");
        let ids: Vec<&str> = tasks.iter().map(Task::id).collect();
        let expected: Vec<String> = (1..=*count).map(|i| i.to_string()).collect();
        assert_eq!(ids, expected, "{spec}");
        for task in &tasks {
            assert_eq!(
                task.status(),
                TaskStatus::Completed,
                "{spec} task {}",
                task.id()
            );
            assert_eq!(task.depth(), 0, "{spec} task {}", task.id());
            assert!(!task.title().is_empty(), "{spec} task {}", task.id());
            assert!(
                !task.requirements().is_empty(),
                "{spec} task {}: requirements",
                task.id()
            );
            assert!(
                task.leverage().is_some(),
                "{spec} task {}: leverage",
                task.id()
            );
            assert!(!task.files().is_empty(), "{spec} task {}: files", task.id());
            assert!(
                task.purpose().is_some(),
                "{spec} task {}: purpose",
                task.id()
            );
        }
    }
}

#[test]
fn corpus_prompts_are_whole() {
    let Some(files) = corpus() else { return };
    let mut blocks = 0;
    for (spec, _, text) in &files {
        let lines: Vec<&str> = text.lines().collect();
        let (tasks, _) = parse_tasks(text);
        for (i, task) in tasks.iter().enumerate() {
            let at = format!("{spec} task {}", task.id());
            let prompt = task.prompt().unwrap_or_else(|| panic!("{at}: no prompt"));
            let (raw, block, start) = raw_prompt(&lines, task.line());
            if let Some(next) = tasks.get(i + 1) {
                assert!(
                    start + 1 < next.line(),
                    "{at}: the _Prompt: line belongs to the next task"
                );
            }
            assert_eq!(normalize(prompt), normalize(&raw), "{at}");
            assert_eq!(prompt, prompt.trim(), "{at}: not trimmed");
            if block {
                blocks += 1;
                // Blank lines kept, and the last paragraph there up to its last line.
                assert!(prompt.contains("\n\n"), "{at}: blank lines lost");
                let last_line = raw.lines().last().unwrap().trim();
                assert!(
                    prompt.ends_with(last_line),
                    "{at}: ends {:?}",
                    prompt.lines().last()
                );
                assert!(!prompt.starts_with('|'), "{at}: `|` marker kept");
            }
        }
    }
    // Five of the eight files write their prompts as `|` blocks.
    assert_eq!(blocks, 12 + 5 + 6 + 7 + 5);
}

#[test]
fn corpus_prompts_expose_their_sections() {
    let Some(files) = corpus() else { return };
    for (spec, _, text) in &files {
        for task in parse_tasks(text).0 {
            let at = format!("{spec} task {}", task.id());
            let prompt = task.prompt().unwrap();
            if prompt.contains("Role:") {
                let role = task
                    .prompt_section("Role")
                    .unwrap_or_else(|| panic!("{at}: no Role section"));
                assert!(
                    !role.is_empty() && !role.contains('|'),
                    "{at}: Role {role:?}"
                );
            }
            let keys: Vec<&str> = task.prompt_sections().iter().map(|(key, _)| *key).collect();
            assert_eq!(
                keys.get(..4),
                Some(&["Role", "Task", "Restrictions", "Success"][..]),
                "{at}: {keys:?}"
            );
            for (key, value) in task.prompt_sections() {
                assert!(!value.is_empty(), "{at}: empty {key}");
                assert!(prompt.contains(value), "{at}: {key} is not prompt text");
                assert!(
                    !value.contains("_Leverage:") && !value.contains("_Requirements:"),
                    "{at}: {key}"
                );
            }
        }
    }
}

/// Every `tasks.md` under `dir`, recursively, in a stable order.
fn tasks_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            tasks_files(&path, found);
        } else if path.file_name().is_some_and(|name| name == "tasks.md") {
            found.push(path);
        }
    }
}

#[test]
fn corpus_has_no_near_miss_lines() {
    let Some(root) = corpus_root() else { return };
    let mut files = Vec::new();
    tasks_files(root, &mut files);
    assert!(files.len() >= SPECS.len(), "{files:?}");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (tasks, diagnostics) = parse_tasks(&text);
        assert!(!tasks.is_empty(), "{}", path.display());
        let near_misses: Vec<_> = diagnostics
            .iter()
            .filter(|d| d.message.starts_with("not a task:"))
            .collect();
        assert!(
            near_misses.is_empty(),
            "{}: {near_misses:?}",
            path.display()
        );
    }
}
