//! Per-run and per-spec locks: while one spec's store write, store opening or tasks.md read
//! is stuck, requests on other specs, and on other runs of the same spec, are answered.
//!
//! Each case holds one request inside its I/O (a store whose writes wait at a gate, a store
//! factory that waits, a tasks.md that is a named pipe nobody writes yet), then runs the
//! other requests on another thread and waits for their answers with a deadline. Before
//! the runtime locked per run and per spec, one mutex covered everything and was held
//! through the I/O: the other requests waited until the gate opened, past the deadline.
//! The gate is opened in every outcome, so a failing case ends instead of hanging.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest, StoreFactory,
};
use fact_model::{ManualClock, SourceRole};
use fact_retrieve::FactQuery;
use fact_store::{InMemorySessionFactStore, StoreConfig};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::hooked::Hooked;

/// How long the other requests may take while one is stuck: far more than they need.
const DEADLINE: Duration = Duration::from_secs(20);

/// A gate requests wait at while it is closed.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    closed: bool,
    waiting: usize,
}

impl Gate {
    fn close(&self) {
        self.state.lock().unwrap().closed = true;
    }

    fn open(&self) {
        self.state.lock().unwrap().closed = false;
        self.changed.notify_all();
    }

    /// Waits while the gate is closed.
    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        state.waiting += 1;
        self.changed.notify_all();
        while state.closed {
            state = self.changed.wait(state).unwrap();
        }
        state.waiting -= 1;
    }

    /// Whether a request reached the gate (and waits there) within the deadline.
    fn has_waiter(&self) -> bool {
        let state = self.state.lock().unwrap();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, DEADLINE, |s| s.waiting == 0)
            .unwrap();
        state.waiting > 0
    }
}

/// A project with specs `slow` and `fast`, three tasks each.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    for spec in ["slow", "fast"] {
        let folder = dir.path().join(".spec-context/specs").join(spec);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("tasks.md"), tasks(spec)).unwrap();
    }
    dir
}

fn tasks(spec: &str) -> String {
    (1..=3)
        .map(|n| format!("- [ ] {n}. Task {n} of {spec}\n  - _Prompt: Write src/{spec}{n}.rs_\n"))
        .collect()
}

/// A runtime whose spec `slow` writes through the gate and whose spec `opening` waits at
/// the gate while its store is opened.
fn runtime(dir: &TempDir, gate: &Arc<Gate>) -> DispatchRuntimeManager {
    let gate = gate.clone();
    let stores: StoreFactory = Box::new(move |spec, clock| {
        let store = InMemorySessionFactStore::new(StoreConfig::default(), clock);
        Ok(match spec {
            "slow" => {
                // Writes wait at the gate.
                let gate = gate.clone();
                Arc::new(Hooked {
                    store,
                    hook: Box::new(move |call| {
                        if matches!(call, "add" | "apply") {
                            gate.pass();
                        }
                        Ok(())
                    }),
                })
            }
            "opening" => {
                gate.pass();
                Arc::new(store)
            }
            _ => Arc::new(store),
        })
    });
    DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-26T09:00:00Z".parse().unwrap(),
        )))
        .stores(stores)
        .project_root(dir.path())
        .build()
}

fn output(spec: &str, task: &str) -> String {
    let result = json!({"task_id": task, "status": "completed",
        "summary": format!("task {task} of {spec} done"),
        "files_changed": [format!("src/{spec}{task}.rs")]});
    format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

fn implemented(runtime: &DispatchRuntimeManager, spec: &str, task: &str) -> Result<(), String> {
    runtime
        .ingest_output(IngestOutputRequest::new(
            format!("{spec}:{task}"),
            SourceRole::Implementer,
            task,
            output(spec, task),
        ))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Every kind of request, on spec `fast` and on other runs of spec `slow`: what must be
/// answered while `slow:1`'s write (or `opening`'s store, or `piped`'s tasks.md) is stuck.
fn other_requests(runtime: &DispatchRuntimeManager) -> Value {
    let compile = |spec: &str, task: &str| {
        runtime
            .compile_prompt(CompilePromptRequest::new(
                format!("{spec}:{task}"),
                SourceRole::Implementer,
                task,
            ))
            .map(|r| r.guide_mode)
            .map_err(|e| e.to_string())
    };
    let init = |spec: &str, task: &str| {
        runtime
            .init_run(InitRunRequest::new(spec, task))
            .map(|r| r.run_id)
            .map_err(|e| e.to_string())
    };
    json!({
        "init fast:2": init("fast", "2"),
        "compile fast:1": format!("{:?}", compile("fast", "1")),
        "ingest fast:1": implemented(runtime, "fast", "1"),
        "query fast": runtime
            .query_facts("fast", &FactQuery::new("3", "src/fast1.rs"))
            .map(|r| !r.facts.is_empty())
            .map_err(|e| e.to_string()),
        "history fast": runtime.fact_history("fast", "src/fast1.rs").map(|f| f.len())
            .map_err(|e| e.to_string()),
        "snapshot fast:1": runtime.get_snapshot("fast:1").map(|s| s.revision > 0)
            .map_err(|e| e.to_string()),
        "init slow:2": init("slow", "2"),
        "compile slow:2": format!("{:?}", compile("slow", "2")),
        "knows slow": runtime.knows_spec("slow").map_err(|e| e.to_string()),
        "telemetry": runtime.telemetry().map(|t| t.dispatch_count).map_err(|e| e.to_string()),
        "end fast:2": runtime.end_run("fast:2").map(|r| r.run_id).map_err(|e| e.to_string()),
    })
}

/// What [`other_requests`] answers when every one succeeds, one output of `slow` having
/// been ingested (or being ingested) before.
fn answered() -> Value {
    json!({
        "init fast:2": {"Ok": "fast:2"},
        "compile fast:1": "Ok(Full)",
        "ingest fast:1": {"Ok": null},
        "query fast": {"Ok": true},
        "history fast": {"Ok": 1},
        "snapshot fast:1": {"Ok": true},
        "init slow:2": {"Ok": "slow:2"},
        "compile slow:2": "Ok(Full)",
        "knows slow": {"Ok": true},
        "telemetry": {"Ok": 2},
        "end fast:2": {"Ok": "fast:2"},
    })
}

/// Runs `stuck` on a thread of its own until it reaches `gate` (checked by `reached`), then
/// [`other_requests`] on another thread; returns their answers if they came within the
/// deadline, and `stuck`'s outcome. The gate is opened in every case.
fn while_stuck<T: Send>(
    runtime: &DispatchRuntimeManager,
    reached: impl FnOnce() -> bool,
    release: impl FnOnce(),
    stuck: impl FnOnce() -> T + Send,
) -> (Option<Value>, T) {
    std::thread::scope(|scope| {
        let stuck = scope.spawn(stuck);
        let reached = reached();
        let (sender, answers) = mpsc::channel();
        scope.spawn(move || sender.send(other_requests(runtime)));
        let others = answers.recv_timeout(DEADLINE).ok();
        release();
        assert!(reached, "the stuck request never reached its I/O");
        (others, stuck.join().unwrap())
    })
}

#[test]
fn a_store_write_on_one_spec_does_not_hold_up_other_specs_or_runs() {
    let dir = project();
    let gate = Arc::new(Gate::default());
    let runtime = runtime(&dir, &gate);
    runtime.init_run(InitRunRequest::new("slow", "1")).unwrap();
    runtime.init_run(InitRunRequest::new("fast", "1")).unwrap();
    gate.close();
    let (others, stuck) = while_stuck(
        &runtime,
        || gate.has_waiter(),
        || gate.open(),
        || implemented(&runtime, "slow", "1"),
    );
    let others = others.expect("requests on other specs waited for spec slow's store write");
    assert_eq!(others, answered());
    assert_eq!(stuck, Ok(()));
    // The write that waited is recorded, and counted with the rest.
    assert_eq!(runtime.telemetry().unwrap().dispatch_count, 2);
    assert_eq!(
        runtime.fact_history("slow", "src/slow1.rs").unwrap().len(),
        1
    );
}

#[test]
fn a_store_that_is_slow_to_open_does_not_hold_up_other_specs() {
    let dir = project();
    let folder = dir.path().join(".spec-context/specs/opening");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("tasks.md"), tasks("opening")).unwrap();
    let gate = Arc::new(Gate::default());
    let runtime = runtime(&dir, &gate);
    runtime.init_run(InitRunRequest::new("slow", "1")).unwrap();
    runtime.init_run(InitRunRequest::new("fast", "1")).unwrap();
    implemented(&runtime, "slow", "1").unwrap();
    gate.close();
    let (others, stuck) = while_stuck(
        &runtime,
        || gate.has_waiter(),
        || gate.open(),
        || {
            runtime
                .init_run(InitRunRequest::new("opening", "1"))
                .map(|r| r.run_id)
        },
    );
    let others = others.expect("requests on other specs waited for spec opening's store");
    assert_eq!(others, answered());
    assert_eq!(stuck.unwrap(), "opening:1");
}

/// A tasks.md that is a named pipe: reading it waits until someone writes it.
#[cfg(unix)]
#[test]
fn a_tasks_md_read_that_hangs_does_not_hold_up_other_specs() {
    use std::io::Write;

    let dir = project();
    let folder = dir.path().join(".spec-context/specs/piped");
    std::fs::create_dir_all(&folder).unwrap();
    let pipe = folder.join("tasks.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let gate = Arc::new(Gate::default());
    let runtime = runtime(&dir, &gate);
    runtime.init_run(InitRunRequest::new("slow", "1")).unwrap();
    runtime.init_run(InitRunRequest::new("fast", "1")).unwrap();
    let (others, stuck) = while_stuck(
        &runtime,
        // Nothing tells when the reader is inside the read: give it time to get there.
        || {
            std::thread::sleep(Duration::from_millis(300));
            true
        },
        || {
            // Connect to the reader waiting in its open, then put a plain tasks.md in the
            // pipe's place (init_run reads the file again for the spec's documents), then
            // give the reader the tasks and its end of file.
            let mut writer = std::fs::OpenOptions::new().write(true).open(&pipe).unwrap();
            let plain = folder.join("tasks.md.new");
            std::fs::write(&plain, tasks("piped")).unwrap();
            std::fs::rename(&plain, &pipe).unwrap();
            writer.write_all(tasks("piped").as_bytes()).unwrap();
        },
        || {
            runtime
                .init_run(InitRunRequest::new("piped", "1"))
                .map(|r| r.run_id)
        },
    );
    let mut expected = answered();
    expected["telemetry"] = json!({"Ok": 1});
    let others = others.expect("requests on other specs waited for spec piped's tasks.md");
    assert_eq!(others, expected);
    assert_eq!(stuck.unwrap(), "piped:1");
}
