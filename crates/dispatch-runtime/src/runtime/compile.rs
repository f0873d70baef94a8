//! `compile_prompt`: the stable prefix, the ledger-first dynamic tail with the
//! `[Session Context]` section, and staged compaction into the role's input budget.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fact_model::TokenCounter;
use fact_retrieve::FactQuery;
use ledger::TaskLedger;

use super::api::ledger_mode_name;
use super::{
    CompactionStage, CompilePromptRequest, CompilePromptResponse, DispatchRuntimeManager,
    GuideMode, LedgerMode, RuntimeError,
};
use fact_model::SourceRole;

use crate::DEFAULT_MAX_OUTPUT_TOKENS;

impl DispatchRuntimeManager {
    /// Compiles the prompt of the run's next dispatch for `role`: the role's stable prefix,
    /// then the dynamic tail in this order: `Task ID`, `Max output tokens`, `Delta context`
    /// (the ledger state, with the failure evidence on an implementer retry), `Guide cache
    /// key`, the guide instruction (full on the role's first compile in the run, compact
    /// after), the `[Session Context]` section (omitted when no fact qualifies), `Task
    /// prompt:` and the task prompt.
    ///
    /// Ledger-first: without `task_prompt`, the task prompt is the ledger's entry for the
    /// task (id, title, status, prompt, requirement ids); only missing pieces are added (the
    /// named acceptance criteria from requirements.md, or the task's details when it has no
    /// prompt), with the reason; full documents only in the legacy mode. Over the role's
    /// input budget, the prompt is compacted in stages, each kept only if it saves tokens.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NotADispatchRole`], [`RuntimeError::RunNotInitialized`],
    /// [`RuntimeError::RunTaskMismatch`], [`RuntimeError::DispatchPromptOverflowTerminal`],
    /// or [`RuntimeError::Store`] when the spec's store cannot be opened or read (no prompt
    /// goes out without the session context it should carry).
    pub fn compile_prompt(
        &self,
        request: CompilePromptRequest,
    ) -> Result<CompilePromptResponse, RuntimeError> {
        if !request.role.is_dispatch_agent() {
            return Err(RuntimeError::NotADispatchRole { role: request.role });
        }
        let entry = self.run(&request.run_id)?;
        if entry.task_id != request.task_id {
            return Err(RuntimeError::RunTaskMismatch {
                run_id: request.run_id.clone(),
                bound: entry.task_id.clone(),
                requested: request.task_id.clone(),
            });
        }
        // The run's lock is held to the end (a run is guided once); no other run's is.
        let mut guard = entry.lock(&request.run_id)?;
        let run = &mut *guard;
        // An edited tasks.md reaches this prompt; one that cannot be compiled now leaves the
        // run on its last good ledger rather than failing the dispatch.
        if let Ok((progress, _)) = self.ledgers.load(&entry.spec_name, &run.tasks_path)
            && !Arc::ptr_eq(&progress, &run.progress)
        {
            run.ledger.apply_progress(&progress, self.clock.now());
            run.progress = progress;
        }
        let docs = &run.docs;
        let TaskPrompt {
            text: task_prompt,
            search: retrieval_text,
            mode: ledger_mode,
            reasons: fallback_reasons,
        } = self.task_prompt(
            run.progress.task(&request.task_id),
            docs,
            &request.task_id,
            request.task_prompt.as_deref(),
        );
        let fallback_reason = (!fallback_reasons.is_empty()).then(|| fallback_reasons.join(","));
        let delta = delta_packet(&run.ledger, request.role);
        let guide_cache_key = format!("{}:{}", request.role.as_str(), request.run_id);
        // The run counts as guided only once a prompt with the full guide is returned.
        let guide_mode = if run.guided.contains(&request.role) {
            GuideMode::Compact
        } else {
            GuideMode::Full
        };
        let baseline_docs = format!("{}\n{}\n{}", docs.requirements, docs.design, docs.tasks);
        let query = FactQuery::new(request.task_id.clone(), retrieval_text)
            .with_max_facts(self.prompts.max_facts)
            .with_max_tokens(self.prompts.max_fact_tokens);
        let spec = self.spec(&entry.spec_name)?;
        let started = self.clock.now();
        let retrieval = {
            let _span = tracing::info_span!("retrieval", operation = "compile_prompt").entered();
            spec.retriever
                .retrieve(&query)
                .map_err(super::store_error)?
        };
        let took = self.clock.now().unix_micros() - started.unix_micros();
        // This dispatch cycle would re-send every earlier observation of the spec.
        let masked = spec.observed_tokens.load(Ordering::Relaxed);
        {
            let mut counters = self.counters();
            counters.telemetry.masking_savings_tokens += masked;
            counters.retrieval_us.record(took);
        }
        let max_output = request
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let (Some(prefix), Some(guide)) = (
            crate::prompt::stable_prefix(request.role),
            crate::prompt::guide_instruction(request.role, guide_mode == GuideMode::Full),
        ) else {
            return Err(RuntimeError::NotADispatchRole { role: request.role });
        };
        let budget = if request.role == SourceRole::Implementer {
            self.prompts.implementer_budget
        } else {
            self.prompts.reviewer_budget
        };
        let parts = TailParts {
            task_id: &request.task_id,
            max_output,
            guide_cache_key: &guide_cache_key,
            guide,
            session_context: &retrieval.section,
        };
        let Fitted {
            prompt,
            tokens,
            stage,
            delta_sent,
            guide_mode,
        } = self.fit(&parts, prefix, delta, &task_prompt, budget, guide_mode)?;
        let baseline_prompt_tokens = self
            .counter
            .count(&format!("{prefix}\n\n{baseline_docs}\n{task_prompt}"));
        let session_context = if stage == CompactionStage::Emergency {
            String::new()
        } else {
            retrieval.section.clone()
        };
        let mut counters = self.counters();
        let telemetry = &mut counters.telemetry;
        *telemetry
            .ledger_mode_usage
            .entry(ledger_mode_name(ledger_mode).to_owned())
            .or_default() += 1;
        for reason in fallback_reasons {
            *telemetry
                .fallback_reasons
                .entry(reason.to_owned())
                .or_default() += 1;
        }
        telemetry.prompt_tokens_actual += tokens as u64;
        telemetry.prompt_tokens_baseline += baseline_prompt_tokens as u64;
        if !session_context.is_empty() {
            telemetry.session_context_tokens_injected += retrieval.tokens_used as u64;
        }
        drop(counters);
        if guide_mode == GuideMode::Full {
            run.guided.push(request.role);
        }
        Ok(CompilePromptResponse {
            stable_prefix_hash: short_hash(prefix),
            full_prompt_hash: short_hash(&prompt),
            prompt,
            delta_packet: delta_sent,
            session_fact_ids: if session_context.is_empty() {
                Vec::new()
            } else {
                retrieval
                    .facts
                    .iter()
                    .map(|f| f.fact.id().to_string())
                    .collect()
            },
            session_context,
            guide_mode,
            guide_cache_key,
            prompt_tokens: tokens,
            prompt_token_budget: budget,
            baseline_prompt_tokens,
            ledger_mode,
            fallback_reason,
            compaction_stage: stage,
        })
    }
}

impl DispatchRuntimeManager {
    /// The task prompt of a compile: the caller's (a blank one counts as none), or the
    /// ledger's entry with only the missing pieces added, or, in the legacy mode, either of
    /// those with the full documents.
    fn task_prompt(
        &self,
        task: Option<&ledger::Task>,
        docs: &super::SpecDocs,
        task_id: &str,
        given: Option<&str>,
    ) -> TaskPrompt {
        let given = given.filter(|p| !p.trim().is_empty());
        if self.prompts.legacy {
            let own = given.map_or_else(|| task_text(task, task_id), str::to_owned);
            return TaskPrompt {
                text: format!(
                    "{own}\n\nrequirements.md:\n{}\n\ndesign.md:\n{}",
                    docs.requirements, docs.design
                ),
                search: given.map_or_else(|| retrieval_text(task, task_id), str::to_owned),
                mode: LedgerMode::Legacy,
                reasons: vec!["legacy_mode"],
            };
        }
        match given {
            Some(given) => TaskPrompt {
                text: given.to_owned(),
                search: given.to_owned(),
                mode: LedgerMode::LedgerOnly,
                reasons: Vec::new(),
            },
            None => ledger_first(task, task_id, &docs.requirements),
        }
    }

    /// The prompt within `budget`: whole if it fits; otherwise, with auto-compaction on,
    /// after the stages that save tokens (prune the delta, shorten the task prompt, the
    /// emergency form of prefix, task id and clipped task prompt).
    fn fit(
        &self,
        parts: &TailParts<'_>,
        prefix: &str,
        delta: serde_json::Value,
        task_prompt: &str,
        budget: usize,
        guide_mode: GuideMode,
    ) -> Result<Fitted, RuntimeError> {
        let count = |text: &str| self.counter.count(text);
        let prompt = assemble(prefix, parts, &delta, task_prompt);
        let mut fitted = Fitted {
            tokens: count(&prompt),
            prompt,
            stage: CompactionStage::None,
            delta_sent: delta,
            guide_mode,
        };
        let over = |fitted: &Fitted| fitted.tokens > budget;
        if !over(&fitted) {
            return Ok(fitted);
        }
        if !self.prompts.auto_compaction {
            return Err(RuntimeError::DispatchPromptOverflowTerminal {
                tokens: fitted.tokens,
                budget,
            });
        }
        let pruned = prune_delta(&fitted.delta_sent);
        let candidate = assemble(prefix, parts, &pruned, task_prompt);
        let tokens = count(&candidate);
        if tokens < fitted.tokens {
            fitted.tokens = tokens;
            (fitted.prompt, fitted.delta_sent, fitted.stage) =
                (candidate, pruned, CompactionStage::DeltaPruned);
        }
        if over(&fitted) {
            let room = budget.saturating_sub(fitted.tokens.saturating_sub(count(task_prompt)));
            let shortened = shorten(task_prompt, room, &*self.counter);
            let candidate = assemble(prefix, parts, &fitted.delta_sent, &shortened);
            let tokens = count(&candidate);
            if tokens < fitted.tokens {
                fitted.tokens = tokens;
                (fitted.prompt, fitted.stage) = (candidate, CompactionStage::TaskPromptShortened);
            }
        }
        if over(&fitted) {
            // The emergency form: the contract, the task's id and as much of its own prompt
            // (not the already shortened one) as fits; no delta, guide or context.
            let head = format!(
                "{prefix}\n\nTask ID: {}\nMax output tokens: {}\nTask prompt:\n",
                parts.task_id, parts.max_output
            );
            let room = budget.saturating_sub(count(&head));
            let candidate = format!("{head}{}", shorten(task_prompt, room, &*self.counter));
            let tokens = count(&candidate);
            if tokens < fitted.tokens {
                fitted = Fitted {
                    tokens,
                    prompt: candidate,
                    stage: CompactionStage::Emergency,
                    delta_sent: serde_json::Value::Object(serde_json::Map::new()),
                    guide_mode: GuideMode::Omitted,
                };
            }
        }
        if over(&fitted) {
            return Err(RuntimeError::DispatchPromptOverflowTerminal {
                tokens: fitted.tokens,
                budget,
            });
        }
        Ok(fitted)
    }
}

/// Where a compile's task prompt came from.
struct TaskPrompt {
    /// The task prompt as sent.
    text: String,
    /// The text facts are retrieved with: the task's own words, not boilerplate.
    search: String,
    mode: LedgerMode,
    /// Every fallback reason, in the order they applied.
    reasons: Vec<&'static str>,
}

/// A prompt within its budget, and what compaction left out.
struct Fitted {
    prompt: String,
    tokens: usize,
    stage: CompactionStage,
    /// The delta packet the prompt carries (`{}` in the emergency form).
    delta_sent: serde_json::Value,
    /// How the guide was given (`omitted` in the emergency form).
    guide_mode: GuideMode,
}

/// The fixed parts of a dynamic tail.
struct TailParts<'a> {
    task_id: &'a str,
    max_output: usize,
    guide_cache_key: &'a str,
    guide: &'a str,
    session_context: &'a str,
}

/// The prompt: prefix, blank line, then the tail in its fixed order.
fn assemble(
    prefix: &str,
    parts: &TailParts<'_>,
    delta: &serde_json::Value,
    task_prompt: &str,
) -> String {
    let mut tail = vec![
        format!("Task ID: {}", parts.task_id),
        format!("Max output tokens: {}", parts.max_output),
        format!("Delta context: {delta}"),
        format!("Guide cache key: {}", parts.guide_cache_key),
        parts.guide.to_owned(),
    ];
    if !parts.session_context.is_empty() {
        tail.push(parts.session_context.to_owned());
    }
    tail.push("Task prompt:".to_owned());
    tail.push(task_prompt.to_owned());
    format!("{prefix}\n\n{}", tail.join("\n"))
}

fn short_hash(text: &str) -> String {
    blake3::hash(text.as_bytes())
        .to_hex()
        .chars()
        .take(16)
        .collect()
}

/// The task's own text, for retrieval and as the head of a ledger-first prompt.
fn task_text(task: Option<&ledger::Task>, task_id: &str) -> String {
    match task {
        Some(task) => {
            let mut text = format!(
                "Task {}: {} ({})",
                task.id(),
                task.title(),
                task.status().as_str()
            );
            if let Some(prompt) = task.prompt() {
                text.push('\n');
                text.push_str(prompt);
            }
            text
        }
        None => format!("Task {task_id}"),
    }
}

/// The text facts are retrieved with: the task's title and what its prompt asks (the
/// prompt's `Task` section when it has one), never the fixed boilerplate around it.
fn retrieval_text(task: Option<&ledger::Task>, task_id: &str) -> String {
    match task {
        Some(task) => {
            let ask = task
                .prompt_section("Task")
                .or(task.prompt())
                .unwrap_or_default();
            format!("{} {ask}", task.title())
        }
        None => format!("Task {task_id}"),
    }
}

/// The ledger-first task prompt, the retrieval text, the mode and every fallback reason
/// (`task_not_in_ledger`, `requirements_referenced`, `requirements_not_found`,
/// `prompt_missing`).
fn ledger_first(task: Option<&ledger::Task>, task_id: &str, requirements_md: &str) -> TaskPrompt {
    let own = task_text(task, task_id);
    let search = retrieval_text(task, task_id);
    let Some(task) = task else {
        return TaskPrompt {
            text: own,
            search,
            mode: LedgerMode::LedgerPlusFallback,
            reasons: vec!["task_not_in_ledger"],
        };
    };
    let mut text = own.clone();
    let mut reasons = Vec::new();
    let ids = task.requirements();
    if !ids.is_empty() {
        text.push_str(&format!("\nRequirements: {}", ids.join(", ")));
        let (criteria, unmatched) = crate::prompt::acceptance_criteria(requirements_md, &ids);
        if !criteria.is_empty() {
            text.push_str("\nAcceptance criteria:\n");
            text.push_str(&criteria.join("\n"));
            reasons.push("requirements_referenced");
        }
        if !unmatched.is_empty() {
            text.push_str(&format!(
                "\nNot found in requirements.md: {}",
                unmatched.join(", ")
            ));
            reasons.push("requirements_not_found");
        }
    }
    if task.prompt().is_none() {
        for detail in task.details() {
            text.push_str(&format!("\n- {detail}"));
        }
        if let Some(purpose) = task.purpose() {
            text.push_str(&format!("\nPurpose: {purpose}"));
        }
        reasons.push("prompt_missing");
    }
    let mode = if reasons.is_empty() {
        LedgerMode::LedgerOnly
    } else {
        LedgerMode::LedgerPlusFallback
    };
    TaskPrompt {
        text,
        search,
        mode,
        reasons,
    }
}

/// The ledger state sent as `Delta context`.
fn delta_packet(task_ledger: &TaskLedger, role: SourceRole) -> serde_json::Value {
    use ledger::keys;
    let text = |key: &str| {
        task_ledger
            .get(key)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let json = |key: &str| {
        task_ledger
            .get(key)
            .and_then(|v| serde_json::from_str::<serde_json::Value>(v).ok())
    };
    let mut packet = serde_json::Map::new();
    let mut put = |name: &str, value: Option<serde_json::Value>| {
        if let Some(value) =
            value.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
        {
            packet.insert(name.to_owned(), value);
        }
    };
    put(
        "active_task_id",
        text(keys::PROGRESS_ACTIVE_TASK_ID).map(Into::into),
    );
    put("totals", json(keys::PROGRESS_TOTALS));
    put("summary", text(keys::TASK_SUMMARY).map(Into::into));
    put(
        "reviewer_assessment",
        text(keys::TASK_REVIEWER_ASSESSMENT).map(Into::into),
    );
    put("reviewer_issues", json(keys::TASK_REVIEWER_ISSUES));
    put("required_fixes", json(keys::TASK_REQUIRED_FIXES));
    put("blockers", json(keys::TASK_BLOCKERS));
    put("stalled_count", json(keys::TASK_STALLED_COUNT));
    put("stalled_flagged", json(keys::TASK_STALLED_FLAGGED));
    put("replan_hint", text(keys::TASK_REPLAN_HINT).map(Into::into));
    if role == SourceRole::Implementer {
        put(
            "failure_evidence",
            task_ledger.failure_evidence().map(Into::into),
        );
    }
    serde_json::Value::Object(packet)
}

/// The delta packet cut to what a retry needs: the active task, fixes, blockers, the stall
/// flag and the replan hint, each list cut to [`PRUNED_ITEMS`] and each text clipped to
/// [`PRUNED_CHARS`].
fn prune_delta(delta: &serde_json::Value) -> serde_json::Value {
    let keep = [
        "active_task_id",
        "required_fixes",
        "blockers",
        "stalled_flagged",
        "replan_hint",
    ];
    let pruned = delta
        .as_object()
        .map(|map| {
            map.iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), trim_value(v)))
                .collect()
        })
        .unwrap_or_default();
    serde_json::Value::Object(pruned)
}

/// Longest list a pruned delta keeps.
const PRUNED_ITEMS: usize = 5;
/// Longest text a pruned delta keeps, in chars.
const PRUNED_CHARS: usize = 200;

/// `value` with lists cut to [`PRUNED_ITEMS`] and strings clipped to [`PRUNED_CHARS`].
fn trim_value(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(fact_model::clip(text, PRUNED_CHARS).into_owned()),
        Value::Array(items) => {
            Value::Array(items.iter().take(PRUNED_ITEMS).map(trim_value).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), trim_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` cut on a char boundary to at most `tokens` under `counter`, marked with `...`
/// (the longest such [`clip`](fact_model::clip), found by binary search on its length).
fn shorten(text: &str, tokens: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= tokens {
        return text.to_owned();
    }
    let (mut low, mut high) = (0usize, fact_model::char_len(text));
    while low < high {
        let mid = (low + high).div_ceil(2);
        if counter.count(&fact_model::clip(text, mid)) <= tokens {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    fact_model::clip(text, low).into_owned()
}
