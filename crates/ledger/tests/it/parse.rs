//! `parse_tasks`: data-driven checks of every accepted line form, the fixtures in
//! `tests/fixtures/`, and property tests over arbitrary and plausible input.

use std::fmt::Write as _;

use ledger::{Task, TaskStatus, parse_tasks};
use proptest::prelude::*;

/// A fixture's text, by folder name.
fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/{name}/tasks.md",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn status(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "[ ]",
        TaskStatus::InProgress => "[-]",
        TaskStatus::Completed => "[x]",
    }
}

/// The parse result as text: one `L<line> d<depth> <status> <id> <title>` line per task,
/// its non-empty metadata indented under it (prompt lines prefixed with `|`, sections
/// with `§`), then one `! L<line> <message>` line per diagnostic.
fn render(text: &str) -> String {
    let (tasks, diagnostics) = parse_tasks(text);
    let mut out = String::new();
    for task in &tasks {
        render_task(&mut out, task);
    }
    for diagnostic in &diagnostics {
        writeln!(out, "! L{} {}", diagnostic.line, diagnostic.message).unwrap();
    }
    out
}

fn render_task(out: &mut String, task: &Task) {
    let (line, depth, mark) = (task.line(), task.depth(), status(task.status()));
    writeln!(
        out,
        "L{line} d{depth} {mark} {} {}",
        task.id(),
        task.title()
    )
    .unwrap();
    if !task.requirements().is_empty() {
        writeln!(out, "  requirements: {}", task.requirements().join(" ; ")).unwrap();
    }
    if let Some(leverage) = task.leverage() {
        writeln!(out, "  leverage: {leverage}").unwrap();
    }
    if !task.files().is_empty() {
        writeln!(out, "  files: {}", task.files().join(" ; ")).unwrap();
    }
    if let Some(purpose) = task.purpose() {
        writeln!(out, "  purpose: {purpose}").unwrap();
    }
    for detail in task.details() {
        writeln!(out, "  detail: {detail}").unwrap();
    }
    if let Some(prompt) = task.prompt() {
        for line in prompt.lines() {
            writeln!(out, "  |{line}").unwrap();
        }
    }
    for (key, value) in task.prompt_sections() {
        writeln!(out, "  § {key}: {}", value.replace('\n', "⏎")).unwrap();
    }
}

/// Asserts that `input` renders as `expected`; leading and trailing blank lines of
/// `expected` and the indentation common to its lines are ignored.
#[track_caller]
fn check(input: &str, expected: &str) {
    let actual = render(input);
    let expected = dedent(expected);
    assert_eq!(
        actual.trim_end(),
        expected.trim_end(),
        "\n--- input ---\n{input}\n--- actual ---\n{actual}"
    );
}

fn dedent(text: &str) -> String {
    let text = text.trim_matches('\n');
    let common = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|line| line.get(common..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `lines` joined with `\n`, with a final newline.
fn text(lines: &[&str]) -> String {
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[test]
fn statuses_id_forms_and_star_bullets() {
    check(
        &text(&[
            "- [ ] 1 Pending, bare id",
            "- [-] 2. In progress, trailing dot",
            "- [x] 3\\. Completed, escaped dot",
            "- [X] 4 Completed, capital X",
            "* [ ] 5. Star bullet",
            "- [ ] 2.3 Dotted id",
            "- [ ] 3.4.1. Three parts, trailing dot",
            "- [ ] 3\\.4\\.2\\. Escaped dots throughout",
            "-\t[x]\t10.20 Tabs after the bullet and the box",
            "- [ ] 6.",
        ]),
        r"
        L1 d0 [ ] 1 Pending, bare id
        L2 d0 [-] 2 In progress, trailing dot
        L3 d0 [x] 3 Completed, escaped dot
        L4 d0 [x] 4 Completed, capital X
        L5 d0 [ ] 5 Star bullet
        L6 d0 [ ] 2.3 Dotted id
        L7 d0 [ ] 3.4.1 Three parts, trailing dot
        L8 d0 [ ] 3.4.2 Escaped dots throughout
        L9 d0 [x] 10.20 Tabs after the bullet and the box
        L10 d0 [ ] 6
        ",
    );
}

#[test]
fn lines_that_are_not_task_lines() {
    // Quoted, bracketed prose, checkboxes without ids: plain lines, no diagnostics.
    check(
        &text(&[
            "> - [x] 7. Quoted",
            "See [x] and [-] in the docs.",
            "- [link](https://example.com) 1. A link",
            "- [ref] 2. A reference, not a checkbox",
            "+ [ ] A plus bullet without an id",
            "1. A numbered item",
            "1. [x] Numbered, no id",
            "- [x]done without an id",
            "[x] no bullet, no id",
        ]),
        "",
    );
}

#[test]
fn near_miss_task_lines_are_diagnosed_with_the_accepted_form() {
    check(
        &text(&[
            "[x] 1. No bullet",
            "1. [x] 2. Ordered list",
            "- [~] 3. Unknown box",
            "- [x]4. No blank after the box",
            "-[x] 5. No blank after the bullet",
            "+ [x] 6. Plus bullet",
            "- [] 7. Empty box",
            "* [ x] 8\\. Padded box, escaped id",
            "  2) [ ] 9.1 Paren-numbered, indented",
            "+ [?]10. Several problems",
            "*[ ] 11 Star without a blank",
        ]),
        r"
        ! L1 not a task: no bullet (a task starts with `-` or `*`). Accepted form: `- [x] 1. No bullet`
        ! L2 not a task: numbered bullet `1.` (a task starts with `-` or `*`). Accepted form: `- [x] 2. Ordered list`
        ! L3 not a task: unknown checkbox `[~]` (`[ ]` pending, `[-]` in progress, `[x]` completed). Accepted form: `- [ ] 3. Unknown box`
        ! L4 not a task: no blank after the checkbox `[x]`. Accepted form: `- [x] 4. No blank after the box`
        ! L5 not a task: no blank after the bullet `-`. Accepted form: `- [x] 5. No blank after the bullet`
        ! L6 not a task: `+` bullet (a task starts with `-` or `*`). Accepted form: `- [x] 6. Plus bullet`
        ! L7 not a task: unknown checkbox `[]` (`[ ]` pending, `[-]` in progress, `[x]` completed). Accepted form: `- [ ] 7. Empty box`
        ! L8 not a task: unknown checkbox `[ x]` (`[ ]` pending, `[-]` in progress, `[x]` completed). Accepted form: `* [ ] 8\. Padded box, escaped id`
        ! L9 not a task: numbered bullet `2)` (a task starts with `-` or `*`). Accepted form: `- [ ] 9.1 Paren-numbered, indented`
        ! L10 not a task: `+` bullet (a task starts with `-` or `*`); unknown checkbox `[?]` (`[ ]` pending, `[-]` in progress, `[x]` completed); no blank after the checkbox `[?]`. Accepted form: `- [ ] 10. Several problems`
        ! L11 not a task: no blank after the bullet `*`. Accepted form: `* [ ] 11 Star without a blank`
        ",
    );
}

#[test]
fn lines_under_a_near_miss_belong_to_no_task() {
    // The near miss is reported; its metadata and prompt do not leak into task 1, and the
    // task lines around it are tasks as usual.
    check(
        &text(&[
            "- [x] 1. Before",
            "  - _Requirements: 1_",
            "- [~] 2. Near miss",
            "  - _Requirements: 2.1_",
            "  - File: src/two.rs",
            "  - A detail of the near miss",
            "  - _Prompt: |",
            "      Role: Two",
            "      + [ ] 9. A near-miss-like prompt line is prompt text",
            "",
            "      Task: Two_",
            "  - [ ] no id inside the skipped block",
            "- [ ] 3. After",
            "  - _Requirements: 3_",
        ]),
        r"
        L1 d0 [x] 1 Before
          requirements: 1
        L13 d0 [ ] 3 After
          requirements: 3
        ! L3 not a task: unknown checkbox `[~]` (`[ ]` pending, `[-]` in progress, `[x]` completed). Accepted form: `- [ ] 2. Near miss`
        ! L12 checkbox without a numeric task id, not a task: [ ] no id inside the skipped block
        ",
    );
}

#[test]
fn checkbox_without_a_numeric_id_is_a_diagnostic_with_its_line() {
    check(
        &text(&[
            "# Tasks",
            "",
            "- [ ] no id here",
            "- [x] 1. First",
            "  - [ ] a sub-item",
            "- [-] 1x. Letters in the id",
            "- [ ] 1..2 Two dots",
            "- [ ] .5 Leading dot",
            "- [ ]",
        ]),
        r"
        L4 d0 [x] 1 First
          detail: [ ] a sub-item
          detail: [-] 1x. Letters in the id
          detail: [ ] 1..2 Two dots
          detail: [ ] .5 Leading dot
          detail: [ ]
        ! L3 checkbox without a numeric task id, not a task: [ ] no id here
        ! L5 checkbox without a numeric task id, not a task: [ ] a sub-item
        ! L6 checkbox without a numeric task id, not a task: [-] 1x. Letters in the id
        ! L7 checkbox without a numeric task id, not a task: [ ] 1..2 Two dots
        ! L8 checkbox without a numeric task id, not a task: [ ] .5 Leading dot
        ! L9 checkbox without a numeric task id, not a task: [ ]
        ",
    );
}

#[test]
fn depth_is_indentation_relative_to_the_least_indented_task() {
    check(
        &text(&[
            "- [ ] 1. Top",
            "  - [ ] 1.1 Two spaces",
            "    - [ ] 1.1.1 Four spaces",
            "   - [ ] 1.2 Three spaces: rounded down",
            " - [ ] 1.3 One space: still top level",
            "\t- [ ] 1.4 One tab",
            "\t\t- [ ] 1.5 Two tabs",
            "\t  - [ ] 1.6 A tab and two spaces",
            "- [ ] 2. Top again",
        ]),
        r"
        L1 d0 [ ] 1 Top
        L2 d1 [ ] 1.1 Two spaces
        L3 d2 [ ] 1.1.1 Four spaces
        L4 d1 [ ] 1.2 Three spaces: rounded down
        L5 d0 [ ] 1.3 One space: still top level
        L6 d1 [ ] 1.4 One tab
        L7 d2 [ ] 1.5 Two tabs
        L8 d2 [ ] 1.6 A tab and two spaces
        L9 d0 [ ] 2 Top again
        ",
    );
    // A list indented as a whole starts at depth 0.
    check(
        &text(&[
            "    - [ ] 1. Outer",
            "      - [ ] 1.1 Inner",
            "        * [x] 1.1.1 Innermost",
        ]),
        r"
        L1 d0 [ ] 1 Outer
        L2 d1 [ ] 1.1 Inner
        L3 d2 [x] 1.1.1 Innermost
        ",
    );
}

#[test]
fn metadata_requirements_leverage_files_purpose_and_details() {
    check(
        &text(&[
            "- [x] 1. Add the module",
            "  - File: src/config/discipline.ts (create src/config/ directory)",
            "  - Files: `src/a.rs` (new), `src/b, c.rs`, src/d.rs, src/e.rs (new, generated)",
            "  - Read SPEC_CONTEXT_DISCIPLINE from environment (default: 'full')",
            "  - Export `getDisciplineMode()` and `getDispatchCli()`",
            "  - Purpose: Centralize discipline configuration reading",
            "  - _Leverage: `src/server.ts` for env var patterns_",
            "  - _Requirements: 1.1, 2 ,3.4.1,_",
            "  - _Requirements: 7_",
            "  - Test: src/config/discipline.test.ts",
            "  - _Note: unknown metadata is a detail_",
            "- [ ] 2. Metadata without bullets",
            "  File: src/x.rs",
            "  Purpose: Plain lines work too",
            "  _Leverage: src/y.rs_",
            "  Requirements: 4, 5",
            "  _Unknown: also a detail_",
            "  Prose that is not a bullet is skipped",
            "  - A detail that wraps",
            "    onto the next line",
            "",
            "    and a line after a blank is skipped",
            "  - Purpose: A second purpose is appended",
            "  - _Leverage: and a second leverage_",
            "  - File:",
        ]),
        r"
        L1 d0 [x] 1 Add the module
          requirements: 1.1 ; 2 ; 3.4.1 ; 7
          leverage: `src/server.ts` for env var patterns
          files: src/config/discipline.ts ; src/a.rs ; src/b, c.rs ; src/d.rs ; src/e.rs
          purpose: Centralize discipline configuration reading
          detail: Read SPEC_CONTEXT_DISCIPLINE from environment (default: 'full')
          detail: Export `getDisciplineMode()` and `getDispatchCli()`
          detail: Test: src/config/discipline.test.ts
          detail: _Note: unknown metadata is a detail_
        L12 d0 [ ] 2 Metadata without bullets
          requirements: 4 ; 5
          leverage: src/y.rs; and a second leverage
          files: src/x.rs
          purpose: Plain lines work too; A second purpose is appended
          detail: _Unknown: also a detail_
          detail: A detail that wraps onto the next line
        ",
    );
}

#[test]
fn metadata_before_the_first_task_is_ignored_without_diagnostics() {
    check(
        &text(&[
            "# Tasks: Example",
            "",
            "> Tasks follow TDD.",
            "  - _Requirements: 9_",
            "  - File: src/nothing.rs",
            "  - _Prompt: |",
            "      Role: Nobody",
            "      Task: Nothing_",
            "- A bullet before any task",
            "",
            "- [ ] 1. First",
        ]),
        "L11 d0 [ ] 1 First",
    );
}

#[test]
fn single_line_prompt_with_sections() {
    let input = text(&[
        "- [x] 1. Extend types",
        "  - _Prompt: Implement the task for spec observation-masking, first call get-implementer-guide to load implementation rules then implement the task: Role: TypeScript Developer | Task: Add `reductionStage?: 'masking' | 'summarization' | 'fallback'`. All new fields are optional. | Restrictions: Do NOT modify existing fields. | _Leverage: src/core/llm/types.ts | _Requirements: Requirement 3 (configurable masking) | Success: (1) it compiles, (2) tests pass | Instructions: Mark this ONE task as [-] in tasks.md before starting._",
        "- [ ] 2. Next",
    ]);
    let (tasks, diagnostics) = parse_tasks(&input);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let task = &tasks[0];
    assert_eq!(
        task.prompt().unwrap(),
        "Implement the task for spec observation-masking, first call get-implementer-guide to load implementation rules then implement the task: Role: TypeScript Developer | Task: Add `reductionStage?: 'masking' | 'summarization' | 'fallback'`. All new fields are optional. | Restrictions: Do NOT modify existing fields. | _Leverage: src/core/llm/types.ts | _Requirements: Requirement 3 (configurable masking) | Success: (1) it compiles, (2) tests pass | Instructions: Mark this ONE task as [-] in tasks.md before starting."
    );
    let sections: Vec<(&str, &str)> = task
        .prompt_sections()
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    assert_eq!(
        sections,
        [
            ("Role", "TypeScript Developer"),
            (
                "Task",
                "Add `reductionStage?: 'masking' | 'summarization' | 'fallback'`. All new fields are optional."
            ),
            ("Restrictions", "Do NOT modify existing fields."),
            ("Success", "(1) it compiles, (2) tests pass"),
            (
                "Instructions",
                "Mark this ONE task as [-] in tasks.md before starting."
            ),
        ]
    );
    assert_eq!(task.prompt_section("role"), Some("TypeScript Developer"));
    assert_eq!(task.prompt_section("Leverage"), None);
    assert_eq!(tasks[1].prompt(), None);
    assert!(tasks[1].prompt_sections().is_empty());
}

#[test]
fn multi_line_block_prompt_keeps_its_blank_lines_and_last_paragraph() {
    let input = text(&[
        "- [x] 1. Add discipline configuration module",
        "  - File: src/config/discipline.ts",
        "  - _Requirements: 1, 2_",
        "  - _Prompt: |",
        "      Implement the task for spec discipline-workflow, first run spec-workflow-guide:",
        "",
        "      Role: TypeScript Developer",
        "",
        "      Task: Create the module:",
        "      1. Create src/config/",
        "        indented continuation",
        "      2. Export getDisciplineMode()",
        "",
        "      Restrictions:",
        "      - Do not add validation",
        "      - Modes are 'full' | 'standard' | 'minimal'",
        "",
        "",
        "      Success:",
        "      - Unit tests cover all modes",
        "",
        "      Before starting, mark this task as in-progress in tasks.md [-]",
        "      When complete, mark this task as done in tasks.md [x]_",
        "  - Purpose: after the prompt, metadata again",
        "- [ ] 2. Next",
    ]);
    let (tasks, diagnostics) = parse_tasks(&input);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let task = &tasks[0];
    assert_eq!(
        task.prompt().unwrap(),
        "Implement the task for spec discipline-workflow, first run spec-workflow-guide:\n\
         \n\
         Role: TypeScript Developer\n\
         \n\
         Task: Create the module:\n\
         1. Create src/config/\n  indented continuation\n\
         2. Export getDisciplineMode()\n\
         \n\
         Restrictions:\n\
         - Do not add validation\n\
         - Modes are 'full' | 'standard' | 'minimal'\n\
         \n\
         \n\
         Success:\n\
         - Unit tests cover all modes\n\
         \n\
         Before starting, mark this task as in-progress in tasks.md [-]\n\
         When complete, mark this task as done in tasks.md [x]"
    );
    assert_eq!(task.prompt_section("Role"), Some("TypeScript Developer"));
    assert_eq!(
        task.prompt_section("Task"),
        Some(
            "Create the module:\n1. Create src/config/\n  indented continuation\n2. Export getDisciplineMode()"
        )
    );
    assert_eq!(
        task.prompt_section("Restrictions"),
        Some("- Do not add validation\n- Modes are 'full' | 'standard' | 'minimal'")
    );
    assert_eq!(
        task.prompt_section("Success"),
        Some(
            "- Unit tests cover all modes\n\nBefore starting, mark this task as in-progress in tasks.md [-]\n\
             When complete, mark this task as done in tasks.md [x]"
        )
    );
    // The bullets inside the prompt are prompt text, not details; metadata resumes after it.
    assert!(task.details().is_empty(), "{:?}", task.details());
    assert_eq!(task.purpose(), Some("after the prompt, metadata again"));
    assert_eq!(task.requirements(), ["1", "2"]);
    assert_eq!((tasks[1].id(), tasks[1].line()), ("2", 25));
}

#[test]
fn prompt_continued_without_the_pipe_marker() {
    check(
        &text(&[
            "- [ ] 1. Continued",
            "  - _Prompt: Implement the task for spec x, first call the guide:",
            "      Role: Rust Developer |",
            "      Task: Parse continued prompts",
            "        over several lines",
            "      | Success: all lines kept_",
            "- [ ] 2. Prompt text on the next line only",
            "  - _Prompt:",
            "      Role: Reviewer",
            "      Task: Review_",
            "- [ ] 3. Empty prompts",
            "  - _Prompt: _",
            "- [ ] 4. Unbulleted",
            "  _Prompt: Role: Writer | Task: Write_",
        ]),
        r"
        L1 d0 [ ] 1 Continued
          |Implement the task for spec x, first call the guide:
          |Role: Rust Developer |
          |Task: Parse continued prompts
          |  over several lines
          || Success: all lines kept
          § Role: Rust Developer
          § Task: Parse continued prompts⏎  over several lines
          § Success: all lines kept
        L7 d0 [ ] 2 Prompt text on the next line only
          |Role: Reviewer
          |Task: Review
          § Role: Reviewer
          § Task: Review
        L11 d0 [ ] 3 Empty prompts
        L13 d0 [ ] 4 Unbulleted
          |Role: Writer | Task: Write
          § Role: Writer
          § Task: Write
        ",
    );
    let (tasks, _) = parse_tasks("- [ ] 1. x\n  - _Prompt: _\n");
    assert_eq!(tasks[0].prompt(), Some(""));
}

#[test]
fn prompt_section_rules() {
    let cases: [(&str, &[(&str, &str)]); 11] = [
        ("Role: A | Task: B", &[("Role", "A"), ("Task", "B")]),
        // Text before the first key is not a section, even in the same piece.
        (
            "Implement the task for spec x-y, first call z: Role: A | Task: B",
            &[("Role", "A"), ("Task", "B")],
        ),
        (
            "Implement the task for spec x-y, first call z:\n\nRole: A\n\nTask: B",
            &[("Role", "A"), ("Task", "B")],
        ),
        // No key at all.
        ("Just do it | please", &[]),
        ("", &[]),
        // A `|` inside a value continues it.
        (
            "Task: a | b | c | Success: d",
            &[("Task", "a | b | c"), ("Success", "d")],
        ),
        // Echoed task metadata belongs to no section.
        (
            "Role: A | _Leverage: x | y | _Requirements: 1 | Success: S",
            &[("Role", "A"), ("Success", "S")],
        ),
        // `|` at line boundaries, paragraphs, and usual keys at the start of a line.
        (
            "Role: A |\nTask: B\n| Restrictions: C\nSuccess: D\nmore D\n\nNote: E",
            &[
                ("Role", "A"),
                ("Task", "B"),
                ("Restrictions", "C"),
                ("Success", "D\nmore D"),
                ("Note", "E"),
            ],
        ),
        // Other keys open a section only at a piece start, not inside a paragraph.
        (
            "Task: build\nNote: inside the task",
            &[("Task", "build\nNote: inside the task")],
        ),
        // Keys: an uppercase letter, then up to 30 letters or spaces.
        (
            "Role: A | lower: no | Key With Spaces: yes | Key-dash: no",
            &[
                ("Role", "A | lower: no"),
                ("Key With Spaces", "yes | Key-dash: no"),
            ],
        ),
        (
            "Abcdefghijklmnopqrstuvwxyzabcde: 31 | Abcdefghijklmnopqrstuvwxyzabcdef: 32",
            &[(
                "Abcdefghijklmnopqrstuvwxyzabcde",
                "31 | Abcdefghijklmnopqrstuvwxyzabcdef: 32",
            )],
        ),
    ];
    for (prompt, expected) in cases {
        let input = format!("- [ ] 1. t\n  - _Prompt: |\n{}_\n", indent(prompt));
        let (tasks, diagnostics) = parse_tasks(&input);
        assert!(diagnostics.is_empty(), "{prompt:?}: {diagnostics:?}");
        assert_eq!(tasks[0].prompt(), Some(prompt), "{input:?}");
        let actual: Vec<(&str, &str)> = tasks[0]
            .prompt_sections()
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(actual, expected, "{prompt:?}");
    }
}

/// Each non-blank line of `text` indented by six spaces.
fn indent(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("      {line}")
            }
        })
        .collect();
    lines.join("\n")
}

#[test]
fn lines_inside_a_prompt_are_prompt_text() {
    check(
        &text(&[
            "- [ ] 1. Task",
            "  - _Prompt: |",
            "      Task: Check these:",
            "      - [ ] not a task, no diagnostic",
            "      - _Requirements: 5 stays in the prompt",
            "      File: not/a/file.rs",
            "      Done_",
            "  - _Requirements: 1_",
        ]),
        r"
        L1 d0 [ ] 1 Task
          requirements: 1
          |Task: Check these:
          |- [ ] not a task, no diagnostic
          |- _Requirements: 5 stays in the prompt
          |File: not/a/file.rs
          |Done
          § Task: Check these:⏎- [ ] not a task, no diagnostic⏎- _Requirements: 5 stays in the prompt⏎File: not/a/file.rs⏎Done
        ",
    );
}

#[test]
fn unclosed_prompt_is_kept_with_a_diagnostic() {
    check(
        &text(&[
            "- [ ] 1. Cut by the next task",
            "  - _Prompt: |",
            "      Role: Developer",
            "",
            "      Task: The closing underscore is missing",
            "",
            "  - [ ] 1.1 Next task",
            "  - _Prompt: Role: Reviewer | Task: Check",
            "",
            "      Success: Nothing is lost",
        ]),
        r"
        L1 d0 [ ] 1 Cut by the next task
          |Role: Developer
          |
          |Task: The closing underscore is missing
          § Role: Developer
          § Task: The closing underscore is missing
        L7 d1 [ ] 1.1 Next task
          |Role: Reviewer | Task: Check
          |
          |Success: Nothing is lost
          § Role: Reviewer
          § Task: Check
          § Success: Nothing is lost
        ! L2 prompt of task 1 is not closed with `_` before the next task (line 7); kept the 5 line(s) read
        ! L8 prompt of task 1.1 is not closed with `_` before the end of the file; kept the 3 line(s) read
        ",
    );
}

#[test]
fn duplicate_ids_and_a_second_prompt_are_diagnosed() {
    check(
        &text(&[
            "- [ ] 1. First",
            "  - _Prompt: Role: A_",
            "  - _Prompt: Task: B_",
            "- [x] 1. Again",
        ]),
        r"
        L1 d0 [ ] 1 First
          |Role: A
          |
          |Task: B
          § Role: A
          § Task: B
        L4 d0 [x] 1 Again
        ! L3 second `_Prompt:` under task 1, appended to the first
        ! L4 duplicate task id 1 (first at line 1)
        ",
    );
}

#[test]
fn empty_and_blank_input() {
    for input in [
        "",
        "\n",
        "\n\n\n",
        "   \t  ",
        "\r\n",
        "\u{feff}",
        "# Tasks\n\nNothing to do.\n",
    ] {
        let (tasks, diagnostics) = parse_tasks(input);
        assert!(tasks.is_empty() && diagnostics.is_empty(), "{input:?}");
    }
}

#[test]
fn crlf_line_endings_parse_like_lf() {
    for name in [
        "multiline-prompt",
        "single-line-prompt",
        "mixed",
        "unclosed-prompt",
    ] {
        let lf = fixture(name).replace("\r\n", "\n");
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(parse_tasks(&crlf), parse_tasks(&lf), "{name}");
        assert!(crlf.contains("\r\n"));
    }
    let crlf = "- [x] 1. T\r\n  - _Requirements: 1_\r\n  - _Prompt: |\r\n      Role: A\r\n\r\n      Task: B_\r\n";
    check(
        crlf,
        r"
        L1 d0 [x] 1 T
          requirements: 1
          |Role: A
          |
          |Task: B
          § Role: A
          § Task: B
        ",
    );
}

#[test]
fn byte_order_mark_and_non_ascii_text() {
    check(
        "\u{feff}- [ ] 1. Café — naïve 日本語\n  - Purpose: ünïcödé\n  - _Prompt: Rôle: x | Rolé: y | Role: é_\n",
        r"
        L1 d0 [ ] 1 Café — naïve 日本語
          purpose: ünïcödé
          |Rôle: x | Rolé: y | Role: é
          § Role: é
        ",
    );
}

#[test]
fn fixture_multiline_prompt() {
    let (tasks, diagnostics) = parse_tasks(&fixture("multiline-prompt"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let summary: Vec<(&str, TaskStatus, usize)> = tasks
        .iter()
        .map(|t| (t.id(), t.status(), t.line()))
        .collect();
    assert_eq!(
        summary,
        [
            ("1", TaskStatus::Completed, 5),
            ("2", TaskStatus::InProgress, 34),
            ("3", TaskStatus::Pending, 57)
        ]
    );
    let first = &tasks[0];
    assert_eq!(first.files(), ["crates/ledger/src/parse.rs"]);
    assert_eq!(first.requirements(), ["1.1", "1.2", "3"]);
    assert_eq!(first.leverage(), Some("`crates/ledger/src/task.rs`"));
    assert_eq!(
        first.purpose(),
        Some("One pass over tasks.md instead of ad-hoc regexes")
    );
    assert_eq!(
        first.details(),
        [
            "Parse task lines with their checkbox state and numeric id",
            "Attach metadata lines to the task above them"
        ]
    );
    assert_eq!(
        first.prompt().unwrap(),
        "Implement the task for spec ledger-parser, first call get-implementer-guide to load implementation rules then implement the task:

Role: Rust Developer specializing in text parsing

Task: Create the tasks.md parser:
1. Split the text into lines once
2. Recognize `- [ ]`, `- [-]` and `- [x]` task lines
3. Return tasks and diagnostics, never panic

Restrictions:
- No regex crate
- Status is one of 'pending' | 'in_progress' | 'completed'
- Keep the public API small

Success:
- Every real tasks.md parses with no diagnostics
- Prompts keep their blank lines

Before starting, mark this task as in-progress in tasks.md [-]
When complete, mark this task as done in tasks.md [x]"
    );
    let keys: Vec<&str> = first.prompt_sections().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["Role", "Task", "Restrictions", "Success"]);
    assert_eq!(
        tasks[1].prompt_section("Task"),
        Some(
            "Split prompts into Key: value sections.\n\nKeep the text between sections with the section before it."
        )
    );
    assert_eq!(
        tasks[1].files(),
        ["crates/ledger/src/parse.rs", "crates/ledger/src/task.rs"]
    );
    assert_eq!(
        tasks[2].prompt(),
        Some(
            "Role: Technical Writer |\nTask: Describe every accepted line form |\nSuccess: The docs match the parser"
        )
    );
    assert_eq!(
        tasks[2].prompt_section("Task"),
        Some("Describe every accepted line form")
    );
    assert_eq!(
        tasks[2].prompt_section("Success"),
        Some("The docs match the parser")
    );
}

#[test]
fn fixture_single_line_prompt() {
    let (tasks, diagnostics) = parse_tasks(&fixture("single-line-prompt"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(tasks.len(), 2);
    let first = &tasks[0];
    assert_eq!(first.requirements(), ["3", "6"]);
    assert_eq!(
        first.leverage(),
        Some("src/core/llm/types.ts, src/core/llm/history-reducer.ts")
    );
    assert_eq!(first.files(), ["src/core/llm/types.ts"]);
    assert_eq!(first.details().len(), 2);
    let prompt = first.prompt().unwrap();
    assert!(
        prompt.starts_with("Implement the task for spec history-masking"),
        "{prompt}"
    );
    assert!(
        prompt.ends_with("When done, mark [x] in tasks.md."),
        "{prompt}"
    );
    assert!(prompt.contains("| _Leverage: src/core/llm/types.ts for HistoryReducerOptions |"));
    let keys: Vec<&str> = first.prompt_sections().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        ["Role", "Task", "Restrictions", "Success", "Instructions"]
    );
    assert_eq!(
        first.prompt_section("Role"),
        Some("TypeScript Developer specializing in type systems")
    );
    assert_eq!(
        first.prompt_section("Task"),
        Some(
            "Extend HistoryReducerOptions with `observationMasking?: boolean` and HistoryReductionResult with \
             `reductionStage?: 'masking' | 'summarization' | 'fallback'`. All new fields are optional."
        )
    );
    assert_eq!(
        first.prompt_section("Restrictions"),
        Some("Do NOT modify existing field types. Only extend the interfaces.")
    );
    assert_eq!(
        tasks[1].prompt_section("Task"),
        Some(
            "Create `function maskObservations(messages: ChatMessage[], keep: Set<number>): { messages: ChatMessage[]; \
             maskedCount: number }`. Signature: pure, no mutation."
        )
    );
    assert_eq!(
        tasks[1].details(),
        [
            "Test: src/core/llm/history-reducer.test.ts",
            "Create a pure function that replaces old results with a placeholder"
        ]
    );
}

#[test]
fn fixture_mixed_forms() {
    check(
        &fixture("mixed"),
        r"
        L8 d0 [x] 1 Completed with a trailing dot
          requirements: 1.1 ; 2 ; 3.4.1
          files: src/a.rs ; src/b.rs ; src/c, d.rs
          purpose: Metadata written without a bullet
          detail: _Note: unknown metadata is a detail_
          detail: A detail bullet that wraps onto a second line
          detail: [ ] a sub-checklist item without an id
        L16 d0 [x] 2 Completed with a capital X and no dot
        L17 d1 [-] 2.1 In progress, nested
        L18 d2 [ ] 2.1.1 Pending, nested twice with a star bullet
        L19 d0 [ ] 3 Escaped dot
        L20 d1 [ ] 3.1 Tab-indented
        L21 d0 [ ] 10.20.30 Multi-digit parts
          detail: [ ] Not a task: no id
          detail: [ ] 1.x Not a task: bad id
          |Implement the task for spec mixed, first read the guide:
          |Role: Rust Developer |
          |Task: Parse continued prompts
          |over several lines
          § Role: Rust Developer
          § Task: Parse continued prompts⏎over several lines
        L28 d0 [ ] 4 Last task
        ! L15 checkbox without a numeric task id, not a task: [ ] a sub-checklist item without an id
        ! L26 checkbox without a numeric task id, not a task: [ ] Not a task: no id
        ! L27 checkbox without a numeric task id, not a task: [ ] 1.x Not a task: bad id
        ",
    );
}

#[test]
fn fixture_unclosed_prompt() {
    check(
        &fixture("unclosed-prompt"),
        r"
        L3 d0 [ ] 1 The prompt runs into the next task
          |Role: Developer
          |
          |Task: The closing underscore is missing
          § Role: Developer
          § Task: The closing underscore is missing
        L8 d0 [ ] 2 The prompt runs to the end of the file
          requirements: 2
          |Role: Reviewer | Task: Check the parser
          |
          |Success: Nothing is lost
          § Role: Reviewer
          § Task: Check the parser
          § Success: Nothing is lost
        ! L4 prompt of task 1 is not closed with `_` before the next task (line 8); kept the 4 line(s) read
        ! L10 prompt of task 2 is not closed with `_` before the end of the file; kept the 3 line(s) read
        ",
    );
}

/// The invariants that hold for any input.
fn assert_invariants(text: &str) -> Result<(), TestCaseError> {
    let (tasks, diagnostics) = parse_tasks(text);
    let line_count = text.lines().count();
    let mut previous = 0;
    for task in &tasks {
        prop_assert!(
            (1..=line_count).contains(&task.line()),
            "line {} of {line_count}",
            task.line()
        );
        prop_assert!(task.line() > previous, "tasks out of order");
        previous = task.line();
        let id = task.id();
        prop_assert!(
            !id.is_empty() && id.chars().all(|c| c.is_ascii_digit() || c == '.'),
            "id {id:?}"
        );
        prop_assert!(
            !id.starts_with('.') && !id.ends_with('.') && !id.contains(".."),
            "id {id:?}"
        );
        prop_assert!(task.depth() < line_count.max(1) * 2);
        if let Some(prompt) = task.prompt() {
            prop_assert_eq!(prompt, prompt.trim());
            for (key, value) in task.prompt_sections() {
                prop_assert!(prompt.contains(value), "section {key} not in prompt");
            }
        }
    }
    for diagnostic in &diagnostics {
        prop_assert!(
            (1..=line_count).contains(&diagnostic.line),
            "diagnostic line {}",
            diagnostic.line
        );
    }
    Ok(())
}

/// Lines made of pieces that trigger every rule of the parser.
fn plausible_line() -> impl Strategy<Value = String> {
    let indent = prop::sample::select(vec!["", " ", "  ", "    ", "\t", "\t  ", "      "]);
    let bullet = prop::sample::select(vec!["", "- ", "* ", "-", "-\t", "+ "]);
    let checkbox = prop::sample::select(vec!["", "[ ] ", "[-] ", "[x] ", "[X] ", "[?] ", "[x]"]);
    let id = prop::sample::select(vec![
        "",
        "1. ",
        "1 ",
        "1\\. ",
        "2.3 ",
        "3.4.1. ",
        "1..2 ",
        "x. ",
        ".5 ",
        "99999999999999999999 ",
    ]);
    let body = prop::sample::select(vec![
        "",
        "Title",
        "_Prompt: |",
        "_Prompt:",
        "_Prompt: Role: A | Task: B_",
        "_Prompt: intro: Role: A |",
        "_Requirements: 1.1, 2_",
        "_Leverage: `src/a.rs`_",
        "File: `a`, b (new), (c",
        "Files: ,,`",
        "Purpose: p",
        "Role: x |",
        "| Task: y",
        "Success: z_",
        "_Unknown: u_",
        "text_",
        "_",
        "|",
        " | ",
        "é ü 日本 — ",
        "\u{feff}",
        "\r",
    ]);
    (indent, bullet, checkbox, id, body, "\\PC{0,6}")
        .prop_map(|(i, b, c, d, body, tail)| format!("{i}{b}{c}{d}{body}{tail}"))
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in any::<String>()) {
        assert_invariants(&text)?;
    }

    #[test]
    fn never_panics_on_arbitrary_lines(lines in prop::collection::vec("[ \t\\-*\\[\\]xX1-9.\\\\_|:A-Za-z\u{e9}\u{65e5}\r]{0,24}", 0..30)) {
        assert_invariants(&lines.join("\n"))?;
    }

    #[test]
    fn never_panics_on_plausible_lines(lines in prop::collection::vec(plausible_line(), 0..40), crlf in any::<bool>()) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        assert_invariants(&text)?;
    }
}
