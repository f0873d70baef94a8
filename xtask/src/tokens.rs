//! `cargo xtask eval tokens --corpus DIR`: ledger-first prompt tokens against a full replay
//! of the spec documents, for every task of every spec in a corpus of spec folders
//! (`DIR/<spec>/{tasks,requirements,design}.md`, as in `../shared/corpus/spec-context-specs`).
//!
//! Each spec is copied into a fresh project in a temporary folder and run through the
//! runtime task by task: the implementer prompt is compiled, then a result built from the
//! task (its title as summary, its files as changed files) is ingested with an approving
//! review, so later tasks see earlier tasks' facts in their `[Session Context]`. The
//! reviewer's prompt is compiled too, as an orchestrator would (it counts as a dispatch
//! cycle and may inject facts), but the reductions are the implementer prompts'. Prints one
//! JSON object per spec and one for the whole corpus.
//!
//! Injected tokens are set against what observation masking saves. An orchestrator
//! re-sends its history on every dispatch cycle, so a masked observation saves its tokens
//! on every later cycle of the session, not once: the runtime's telemetry counts
//! `masking_savings_tokens` as the sum over observations of tokens x later cycles, and
//! `injected_to_masked_ratio` against it (seed 000's goal: under 0.1). The raw
//! `injected_to_observed_ratio`, which counts the savings once, is printed beside it. The
//! outputs here are block-only (the contract asks for nothing else), so they are the
//! smallest observations an orchestrator would see.

use std::path::{Path, PathBuf};

use dispatch_runtime::reexports::{CharsPerToken, ProgressLedger, SourceRole, TokenCounter};
use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
};
use serde_json::{Value, json};

use crate::error::Error;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Entry point of `cargo xtask eval tokens`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let corpus = match args {
        [flag, dir] if flag == "--corpus" => PathBuf::from(dir),
        _ => return Err(Error::Usage("`eval tokens` needs `--corpus DIR`".into())),
    };
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .map_err(|e| Error::Failed(format!("cannot read {}: {e}", corpus.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("tasks.md").is_file())
        .collect();
    specs.sort();
    let mut all_reductions = Vec::new();
    let (mut injected, mut observed, mut max_context) = (0u64, 0u64, 0usize);
    let mut masked = 0u64;
    let mut out = std::io::stdout().lock();
    for spec in &specs {
        let report = evaluate(spec)?;
        all_reductions.extend(report.reductions.iter().copied());
        injected += report.injected;
        observed += report.observed;
        masked += report.masked;
        max_context = max_context.max(report.max_context);
        let mut reductions = report.reductions.clone();
        let line = json!({
            "spec": report.name, "tasks": report.reductions.len(),
            "median_reduction": (median(&mut reductions) * 1000.0).round() / 1000.0,
            "max_session_context_tokens": report.max_context,
            "prompt_tokens": report.prompt_tokens, "baseline_tokens": report.baseline_tokens,
            "injected_to_masked_ratio": ratio(report.injected, report.masked),
        });
        std::io::Write::write_all(&mut out, format!("{line}\n").as_bytes())
            .map_err(|e| Error::Failed(e.to_string()))?;
    }
    // Two outputs (implementer and reviewer) are ingested per task.
    let outputs = 2 * all_reductions.len() as u64;
    let total = json!({
        "spec": "ALL", "tasks": all_reductions.len(),
        "median_reduction": (median(&mut all_reductions) * 1000.0).round() / 1000.0,
        "max_session_context_tokens": max_context,
        "session_context_tokens_injected": injected,
        "observation_tokens_ingested": observed,
        "injected_to_observed_ratio": ratio(injected, observed),
        "masking_savings_tokens": masked,
        "injected_to_masked_ratio": ratio(injected, masked),
        // The same with the masking model: the mean output size above which injections are
        // under 10% of what masking saves, if every output had that size (the savings grow
        // with it, the injections do not): 10 x injected / later cycles per output token.
        "masked_break_even_tokens_per_output": (injected * 10 * observed).div_ceil((masked * outputs).max(1)),
        "observation_tokens_per_output": observed.checked_div(outputs).unwrap_or(0),
        // The seed's goal, injected < 10% of observed, holds for this session's injections
        // once the mean raw output is larger than this.
        "break_even_tokens_per_output": (injected * 10).div_ceil(outputs.max(1)),
    });
    std::io::Write::write_all(&mut out, format!("{total}\n").as_bytes())
        .map_err(|e| Error::Failed(e.to_string()))
}

/// `part / whole` to three decimals, 0 when `whole` is 0.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        ((part as f64 / whole as f64) * 1000.0).round() / 1000.0
    }
}

struct SpecReport {
    name: String,
    reductions: Vec<f64>,
    prompt_tokens: usize,
    baseline_tokens: usize,
    max_context: usize,
    injected: u64,
    observed: u64,
    masked: u64,
}

fn evaluate(spec: &Path) -> Result<SpecReport, Error> {
    let name = spec
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let project = std::env::temp_dir().join(format!("eval-tokens-{}-{name}", std::process::id()));
    let target = project.join(".spec-context/specs").join(&name);
    std::fs::create_dir_all(&target).map_err(|e| Error::Failed(e.to_string()))?;
    for file in ["tasks.md", "requirements.md", "design.md"] {
        if spec.join(file).is_file() {
            std::fs::copy(spec.join(file), target.join(file))
                .map_err(|e| Error::Failed(format!("{file}: {e}")))?;
        }
    }
    let ledger = ProgressLedger::load(&name, &target.join("tasks.md"))
        .map_err(|e| Error::Failed(e.to_string()))?;
    let runtime = DispatchRuntimeManager::builder().build();
    let failed = |e: dispatch_runtime::RuntimeError| Error::Failed(format!("{name}: {e}"));
    let mut report = SpecReport {
        name: name.clone(),
        reductions: Vec::new(),
        prompt_tokens: 0,
        baseline_tokens: 0,
        max_context: 0,
        injected: 0,
        observed: 0,
        masked: 0,
    };
    for task in ledger.tasks() {
        let id = task.id().to_owned();
        let init = InitRunRequest::new(name.clone(), id.clone()).with_project_path(project.clone());
        let run = runtime.init_run(init).map_err(failed)?.run_id;
        let compile = CompilePromptRequest::new(run.clone(), SourceRole::Implementer, id.clone());
        let compiled = runtime.compile_prompt(compile).map_err(failed)?;
        report.prompt_tokens += compiled.prompt_tokens;
        report.baseline_tokens += compiled.baseline_prompt_tokens;
        report.reductions.push(
            1.0 - compiled.prompt_tokens as f64 / compiled.baseline_prompt_tokens.max(1) as f64,
        );
        let review_prompt =
            CompilePromptRequest::new(run.clone(), SourceRole::Reviewer, id.clone());
        let result: Value = json!({"task_id": id, "status": "completed", "summary": task.title(), "files_changed": task.files()});
        let review: Value = json!({"task_id": id, "assessment": "approved"});
        for (role, body) in [
            (SourceRole::Implementer, result),
            (SourceRole::Reviewer, review),
        ] {
            if role == SourceRole::Reviewer {
                runtime
                    .compile_prompt(review_prompt.clone())
                    .map_err(failed)?;
            }
            let output = format!("BEGIN_DISPATCH_RESULT\n{body}\nEND_DISPATCH_RESULT");
            let ingest = IngestOutputRequest::new(run.clone(), role, id.clone(), output);
            runtime.ingest_output(ingest).map_err(failed)?;
        }
        let section_tokens = if compiled.session_context.is_empty() {
            0
        } else {
            CharsPerToken::default().count(&compiled.session_context)
        };
        report.max_context = report.max_context.max(section_tokens);
    }
    let telemetry = runtime.telemetry().map_err(failed)?;
    report.injected = telemetry.session_context_tokens_injected;
    report.observed = telemetry.observation_tokens_ingested;
    report.masked = telemetry.masking_savings_tokens;
    let _ = std::fs::remove_dir_all(&project);
    Ok(report)
}
