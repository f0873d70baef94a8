//! Data-driven tests for the tidy rules: each rule fires on bad input and
//! stays quiet on good input, so a clean workspace run means something.

mod header {
    use crate::tidy::check_file_header;

    #[test]
    fn accepts_inner_doc_comment() {
        assert_eq!(
            check_file_header("a.rs", "//! Does things.\nuse std;\n"),
            None
        );
    }

    #[test]
    fn rejects_missing_or_misplaced_doc_comment() {
        for text in [
            "use std;\n",
            "",
            "\n//! Late.\n",
            "/// Outer doc.\n",
            " //! Indented.\n",
        ] {
            let violation = check_file_header("crates/x/src/lib.rs", text);
            let message = violation.unwrap_or_else(|| panic!("no violation for {text:?}"));
            assert!(
                message.starts_with("crates/x/src/lib.rs:1: [doc-header]"),
                "{message}"
            );
            assert!(message.contains("fix:"), "{message}");
        }
    }
}

mod whitespace {
    use crate::tidy::check_whitespace;

    #[test]
    fn accepts_clean_text() {
        let text = "//! Doc.\n\nfn f() {\n    let s = \"a\tb\";\n}\n";
        assert_eq!(check_whitespace("a.rs", text), Vec::<String>::new());
        assert_eq!(check_whitespace("a.rs", "x\r\ny\r\n"), Vec::<String>::new());
    }

    #[test]
    fn reports_trailing_whitespace_with_line_numbers() {
        let violations = check_whitespace("src/a.rs", "//! Doc.\nfn f() {}   \n");
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/a.rs:2: [whitespace] trailing"));
        for path in ["Cargo.toml", "README.md"] {
            let violations = check_whitespace(path, "a\nb\t\nc \n");
            let lines: Vec<&str> = violations
                .iter()
                .filter_map(|v| v.split(": ").next())
                .collect();
            assert_eq!(lines, [format!("{path}:2"), format!("{path}:3")]);
        }
    }

    #[test]
    fn reports_tab_indentation_in_rust_only() {
        let violations = check_whitespace("a.rs", "fn f() {\n\tg();\n  \th();\n}\n");
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations[0].starts_with("a.rs:2: [whitespace] tab used for indentation"));
        assert!(violations[1].starts_with("a.rs:3: "));
        assert_eq!(check_whitespace("a.md", "\tcode\n"), Vec::<String>::new());
    }
}

mod clock {
    use crate::tidy::check_clock_use;

    const CALL: &str = "//! Doc.\nfn now() {\n    let _ = std::time::SystemTime::now();\n}\n";

    #[test]
    fn flags_clock_reads_in_library_source() {
        let violations = check_clock_use("crates/fact-store/src/lib.rs", CALL);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("crates/fact-store/src/lib.rs:3: [injected-time]"));
        assert!(violations[0].contains("`SystemTime::now`"));
        assert!(violations[0].contains("fix:"));
        let instant = "let t = Instant::now();\n";
        assert_eq!(
            check_clock_use("crates/ledger/src/a/b.rs", instant).len(),
            1
        );
    }

    #[test]
    fn allows_the_clock_module_tests_benches_examples_and_comments() {
        for path in [
            "crates/fact-model/src/clock.rs",
            "crates/fact-store/tests/store.rs",
            "crates/fact-store/benches/append.rs",
            "crates/fact-store/examples/demo.rs",
            "xtask/src/check.rs",
        ] {
            assert_eq!(check_clock_use(path, CALL), Vec::<String>::new(), "{path}");
        }
        let comment = "//! Never call `Instant::now` here.\n    // nor SystemTime::now\n";
        assert_eq!(
            check_clock_use("crates/fact-store/src/lib.rs", comment),
            Vec::<String>::new()
        );
    }
}

mod concrete {
    use crate::tidy::check_concrete_names;

    const USES_STORE: &str =
        "//! Doc.\nfn f() {\n    let s = InMemorySessionFactStore::default();\n}\n";

    #[test]
    fn flags_another_crate_s_implementation_in_library_code() {
        let violations = check_concrete_names("crates/fact-retrieve/src/retriever.rs", USES_STORE);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("crates/fact-retrieve/src/retriever.rs:3: [concrete]"));
        assert!(violations[0].contains("`InMemorySessionFactStore`"));
        assert!(violations[0].contains("fix:"));
        let counter = "let c: Arc<dyn TokenCounter> = Arc::new(BpeTokenCounter::o200k_base()?);\n";
        assert_eq!(
            check_concrete_names("crates/ledger/src/cache.rs", counter).len(),
            1
        );
        // fact-model's clocks and character estimate are values any crate may name.
        let clock = "use fact_model::{CharsPerToken, SystemClock};\n";
        assert!(check_concrete_names("crates/ledger/src/cache.rs", clock).is_empty());
    }

    #[test]
    fn allows_the_owner_the_composer_tests_comments_and_longer_names() {
        for path in [
            "crates/fact-store/src/memory.rs",
            "crates/dispatch-runtime/src/runtime.rs",
            "crates/facts/src/main.rs",
            "crates/fact-retrieve/tests/it/main.rs",
            "crates/fact-retrieve/benches/retrieve.rs",
            "crates/fact-retrieve/src/memory/tests.rs",
        ] {
            assert_eq!(
                check_concrete_names(path, USES_STORE),
                Vec::<String>::new(),
                "{path}"
            );
        }
        let after_cfg_test =
            "//! Doc.\n#[cfg(test)]\nmod tests {\n    use fact_model::ManualClock;\n}\n";
        let doc = "/// Build one with `InMemorySessionFactStore::default()`.\n";
        let longer = "struct MyInMemorySessionFactStoreWrapper;\n";
        for text in [after_cfg_test, doc, longer] {
            assert_eq!(
                check_concrete_names("crates/fact-retrieve/src/lib.rs", text),
                Vec::<String>::new(),
                "{text}"
            );
        }
    }

    #[test]
    fn each_backend_owns_its_store_and_the_core_names_none() {
        let sqlite = "let s = SqliteFactStore::open(path)?;\n";
        let pg = "let db = PgDatabase::connect(url)?;\nlet s = PgFactStore::new(db);\n";
        // Each backend names its own; the composers name both.
        for (path, text) in [
            ("crates/fact-store-sqlite/src/store.rs", sqlite),
            ("crates/fact-store-postgres/src/store.rs", pg),
            ("crates/dispatch-runtime/src/store.rs", sqlite),
            ("crates/dispatch-runtime/src/store.rs", pg),
        ] {
            assert_eq!(
                check_concrete_names(path, text),
                Vec::<String>::new(),
                "{path}"
            );
        }
        // A crate's directory is matched whole: `crates/fact-store/` is not a prefix match
        // for `fact-store-sqlite`, nor the other way round.
        for (path, text, owner, count) in [
            (
                "crates/fact-store/src/lib.rs",
                sqlite,
                "fact-store-sqlite",
                1,
            ),
            ("crates/fact-store/src/lib.rs", pg, "fact-store-postgres", 2),
            (
                "crates/fact-store-sql/src/rules.rs",
                pg,
                "fact-store-postgres",
                2,
            ),
            (
                "crates/fact-store-postgres/src/lib.rs",
                sqlite,
                "fact-store-sqlite",
                1,
            ),
            (
                "crates/fact-store-sqlite/src/lib.rs",
                pg,
                "fact-store-postgres",
                2,
            ),
        ] {
            let violations = check_concrete_names(path, text);
            assert_eq!(violations.len(), count, "{path}: {violations:?}");
            assert!(
                violations[0].contains(&format!("an implementation from `{owner}`")),
                "{violations:?}"
            );
        }
        // The in-memory store stays the core's.
        let memory = "let s = InMemorySessionFactStore::default();\n";
        assert!(check_concrete_names("crates/fact-store/src/memory.rs", memory).is_empty());
        assert_eq!(
            check_concrete_names("crates/fact-store-sqlite/src/lib.rs", memory).len(),
            1
        );
    }
}

mod layering {
    use crate::tidy::{CrateInfo, Dep, DepKind, check_layering, parse_metadata};
    use DepKind::{Build, Dev, Normal};

    fn krate(name: &str, is_lib: bool, deps: &[(&str, DepKind)]) -> CrateInfo {
        CrateInfo {
            name: name.to_owned(),
            is_lib,
            deps: deps
                .iter()
                .map(|&(name, kind)| Dep {
                    name: name.to_owned(),
                    kind,
                })
                .collect(),
        }
    }

    /// A graph that follows every rule, including the allowed edge cases.
    fn good_graph() -> Vec<CrateInfo> {
        vec![
            krate("fact-model", true, &[("serde", Normal), ("proptest", Dev)]),
            krate("fact-store", true, &[("fact-model", Normal)]),
            krate("fact-extract", true, &[("fact-model", Normal)]),
            krate(
                "fact-retrieve",
                true,
                &[
                    ("fact-model", Normal),
                    ("fact-store", Normal),
                    ("factmem-ledger", Dev),
                ],
            ),
            krate("factmem-ledger", true, &[("fact-model", Normal)]),
            krate(
                "fact-store-sql",
                true,
                &[("fact-model", Normal), ("fact-store", Normal)],
            ),
            // A backend combines the core and the SQL rules: that is not two services.
            krate(
                "fact-store-sqlite",
                true,
                &[
                    ("fact-model", Normal),
                    ("fact-store", Normal),
                    ("fact-store-sql", Normal),
                    ("fact-store", Dev),
                ],
            ),
            krate(
                "fact-store-postgres",
                true,
                &[
                    ("fact-store", Normal),
                    ("fact-store-sql", Normal),
                    ("fact-store-sql", Dev),
                ],
            ),
            krate(
                "dispatch-runtime",
                true,
                &[
                    ("fact-store", Normal),
                    ("fact-extract", Normal),
                    ("factmem-ledger", Build),
                    ("fact-store-sqlite", Normal),
                    ("fact-store-postgres", Normal),
                ],
            ),
            krate(
                "factmem-cli",
                false,
                &[("dispatch-runtime", Normal), ("fact-store", Dev)],
            ),
            krate(
                "factmem-python",
                true,
                &[
                    ("dispatch-runtime", Normal),
                    ("factmem-cli", Normal),
                    ("pyo3", Normal),
                ],
            ),
            krate(
                "xtask",
                false,
                &[
                    ("serde_json", Dev),
                    ("fact-store-sqlite", Normal),
                    ("fact-store-postgres", Build),
                    ("fact-store-sql", Dev),
                ],
            ),
        ]
    }

    /// `good_graph` plus one extra dependency, checked.
    fn violations_with(name: &str, dep: &str, kind: DepKind) -> Vec<String> {
        let mut crates = good_graph();
        let krate = crates.iter_mut().find(|krate| krate.name == name).unwrap();
        krate.deps.push(Dep {
            name: dep.to_owned(),
            kind,
        });
        check_layering(&crates)
    }

    fn assert_one(violations: &[String], krate: &str, rule: &str) {
        assert_eq!(violations.len(), 1, "{violations:?}");
        let message = &violations[0];
        assert!(message.contains(&format!("crate `{krate}`")), "{message}");
        assert!(message.contains(&format!("[layering {rule}]")), "{message}");
        assert!(message.contains("fix:"), "{message}");
    }

    #[test]
    fn accepts_a_well_layered_graph() {
        assert_eq!(check_layering(&good_graph()), Vec::<String>::new());
    }

    #[test]
    fn rule_1_fact_model_depends_on_no_workspace_crate() {
        assert_one(
            &violations_with("fact-model", "fact-store", Normal),
            "fact-model",
            "1",
        );
        assert_one(
            &violations_with("fact-model", "factmem-ledger", Dev),
            "fact-model",
            "1",
        );
        assert_one(
            &violations_with("fact-model", "dispatch-runtime", Build),
            "fact-model",
            "1",
        );
    }

    #[test]
    fn rule_2_only_dispatch_runtime_combines_services() {
        let violations = violations_with("fact-retrieve", "factmem-ledger", Normal);
        assert_one(&violations, "fact-retrieve", "2");
        assert!(
            violations[0].contains("`fact-store`, `factmem-ledger`"),
            "{violations:?}"
        );
        assert_one(
            &violations_with("fact-retrieve", "fact-extract", Build),
            "fact-retrieve",
            "2",
        );
        // Dev-dependencies are exempt.
        assert_eq!(
            violations_with("fact-retrieve", "fact-extract", Dev),
            Vec::<String>::new()
        );
    }

    #[test]
    fn rule_5_binaries_depend_on_dispatch_runtime_alone() {
        assert_one(
            &violations_with("factmem-cli", "fact-extract", Normal),
            "factmem-cli",
            "5",
        );
        assert_one(
            &violations_with("factmem-cli", "factmem-ledger", Build),
            "factmem-cli",
            "5",
        );
        // A front end with a library target (the Python package) is held to the same rule.
        assert_one(
            &violations_with("factmem-python", "fact-store", Normal),
            "factmem-python",
            "5",
        );
        assert_one(
            &violations_with("factmem-python", "fact-model", Build),
            "factmem-python",
            "5",
        );
        assert_eq!(
            violations_with("factmem-python", "fact-store", Dev),
            Vec::<String>::new()
        );
        // The Python package carries the `facts` command (good_graph), but the exception
        // goes one way only: the command carries no other front end.
        assert_one(
            &violations_with("factmem-cli", "factmem-python", Normal),
            "factmem-cli",
            "5",
        );
        // Tests of a binary may use the layers below.
        assert_eq!(
            violations_with("factmem-cli", "factmem-ledger", Dev),
            Vec::<String>::new()
        );
    }

    #[test]
    fn rule_3_lower_layers_do_not_use_dispatch_runtime() {
        for service in [
            "fact-store",
            "fact-extract",
            "fact-retrieve",
            "factmem-ledger",
            "fact-store-sql",
            "fact-store-sqlite",
            "fact-store-postgres",
        ] {
            assert_one(
                &violations_with(service, "dispatch-runtime", Dev),
                service,
                "3",
            );
        }
    }

    #[test]
    fn rule_6_only_dispatch_runtime_and_xtask_name_a_backend() {
        for (name, backend, kind) in [
            ("fact-retrieve", "fact-store-sqlite", Normal),
            ("factmem-ledger", "fact-store-postgres", Build),
            ("fact-extract", "fact-store-sqlite", Dev),
            // The core and the SQL rules sit below the backends.
            ("fact-store", "fact-store-sqlite", Normal),
            ("fact-store", "fact-store-postgres", Dev),
            ("fact-store-sql", "fact-store-postgres", Normal),
            ("fact-store-sql", "fact-store-sqlite", Dev),
            // A backend never depends on another, not even in its tests.
            ("fact-store-sqlite", "fact-store-postgres", Normal),
            ("fact-store-postgres", "fact-store-sqlite", Dev),
            // A front end's tests go through the runtime too.
            ("factmem-cli", "fact-store-sqlite", Dev),
        ] {
            let violations = violations_with(name, backend, kind);
            assert_one(&violations, name, "6");
            assert!(
                violations[0].contains(&format!("`{backend}`")),
                "{violations:?}"
            );
        }
        // The runtime and xtask may, with any kind (good_graph has normal ones).
        for (name, kind) in [
            ("dispatch-runtime", Dev),
            ("dispatch-runtime", Build),
            ("xtask", Dev),
        ] {
            assert_eq!(
                violations_with(name, "fact-store-sqlite", kind),
                Vec::<String>::new(),
                "{name}"
            );
        }
    }

    #[test]
    fn rule_7_only_the_backends_use_the_sql_rules() {
        for (name, kind) in [
            ("fact-store", Dev),
            ("fact-store", Build),
            ("dispatch-runtime", Normal),
            ("dispatch-runtime", Dev),
            ("fact-retrieve", Dev),
            ("xtask", Normal),
            ("xtask", Build),
        ] {
            assert_one(&violations_with(name, "fact-store-sql", kind), name, "7");
        }
        let core = violations_with("fact-store", "fact-store-sql", Normal);
        assert_one(&core, "fact-store", "7");
        assert!(core[0].contains("the core knows no SQL"), "{core:?}");
        // The backends may, with any kind; xtask's tests may (good_graph has it as dev).
        for (name, kind) in [
            ("fact-store-sqlite", Dev),
            ("fact-store-sqlite", Build),
            ("fact-store-postgres", Normal),
        ] {
            assert_eq!(
                violations_with(name, "fact-store-sql", kind),
                Vec::<String>::new(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_backend_combines_the_core_and_the_sql_rules_but_no_other_service() {
        // good_graph's backends depend on both `fact-store` and `fact-store-sql`.
        assert_eq!(check_layering(&good_graph()), Vec::<String>::new());
        assert_one(
            &violations_with("fact-store-sqlite", "fact-extract", Normal),
            "fact-store-sqlite",
            "2",
        );
    }

    #[test]
    fn rule_4_nothing_depends_on_xtask() {
        assert_one(
            &violations_with("dispatch-runtime", "xtask", Dev),
            "dispatch-runtime",
            "4",
        );
        assert_one(
            &violations_with("factmem-cli", "xtask", Normal),
            "factmem-cli",
            "4",
        );
    }

    #[test]
    fn parses_cargo_metadata() {
        let metadata = serde_json::json!({
            "packages": [
                {
                    "name": "fact-store",
                    "targets": [{ "kind": ["lib"] }, { "kind": ["bench"] }],
                    "dependencies": [
                        { "name": "fact-model", "kind": null },
                        { "name": "proptest", "kind": "dev" },
                        { "name": "cc", "kind": "build" }
                    ]
                },
                { "name": "xtask", "targets": [{ "kind": ["bin"] }], "dependencies": [] }
            ]
        });
        let crates = parse_metadata(&metadata).unwrap();
        assert_eq!(crates.len(), 2);
        assert_eq!(
            (crates[0].name.as_str(), crates[0].is_lib),
            ("fact-store", true)
        );
        let kinds: Vec<(&str, DepKind)> = crates[0]
            .deps
            .iter()
            .map(|dep| (dep.name.as_str(), dep.kind))
            .collect();
        assert_eq!(
            kinds,
            [("fact-model", Normal), ("proptest", Dev), ("cc", Build)]
        );
        assert_eq!(
            (crates[1].name.as_str(), crates[1].is_lib),
            ("xtask", false)
        );
        assert!(parse_metadata(&serde_json::json!({})).is_err());
    }
}

mod protocol_knowledge {
    use crate::tidy::check_protocol_knowledge;

    const WORDS: &[&str] = &["invalid_request", "completed"];

    #[test]
    fn flags_a_code_or_status_literal_in_binary_source() {
        let text = "//! Doc.\nfn f() {\n    if code == \"invalid_request\" {}\n    let s = \"completed\";\n}\n";
        let violations = check_protocol_knowledge("crates/facts/src/main.rs", text, WORDS);
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(
            violations[0].starts_with("crates/facts/src/main.rs:3:"),
            "{violations:?}"
        );
        assert!(
            violations[0].contains("[protocol-knowledge]"),
            "{violations:?}"
        );
    }

    #[test]
    fn allows_comments_longer_words_and_other_crates() {
        let text = "//! Doc.\n// \"invalid_request\" in a comment\nlet s = \"completed_with\";\n";
        assert!(check_protocol_knowledge("crates/facts/src/main.rs", text, WORDS).is_empty());
        let code = "let s = \"completed\";\n";
        assert!(check_protocol_knowledge("crates/ledger/src/task.rs", code, WORDS).is_empty());
        let agent = "json!({\"status\": \"completed\"})\n";
        assert!(check_protocol_knowledge("crates/facts/src/demo.rs", agent, WORDS).is_empty());
    }
}

mod import_circles {
    use crate::tidy::imports::check_import_circles;

    /// Checks the crate `demo` made of `files`, given relative to its `src/`.
    fn check(files: &[(&str, &str)]) -> Vec<String> {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(path, text)| (format!("crates/demo/src/{path}"), (*text).to_owned()))
            .collect();
        check_import_circles("demo", &files)
    }

    /// Asserts one circle of exactly `members` (relative to `src/`), with an edge for
    /// each of `arrows` as `(from, to, path text)`.
    #[track_caller]
    fn assert_circle(violations: &[String], members: &[&str], arrows: &[(&str, &str, &str)]) {
        assert_eq!(violations.len(), 1, "{violations:#?}");
        let message = &violations[0];
        let files: Vec<String> = members
            .iter()
            .map(|member| format!("crates/demo/src/{member}"))
            .collect();
        assert!(
            message.starts_with(&format!(
                "{}: [import-circles] crate `demo`: {} modules import in a circle: {}\n",
                files[0],
                files.len(),
                files.join(", ")
            )),
            "{message}"
        );
        for (from, to, text) in arrows {
            let arrow = format!("crates/demo/src/{from} -> crates/demo/src/{to} ({text})");
            assert!(message.contains(&arrow), "no `{arrow}` in:\n{message}");
        }
        assert!(message.contains("fix:"), "{message}");
    }

    #[test]
    fn fires_on_two_files_that_use_each_other() {
        let violations = check(&[
            ("lib.rs", "//! Demo.\nmod a;\nmod b;\n"),
            ("a.rs", "//! A.\nuse crate::b::Y;\npub struct X;\n"),
            ("b.rs", "//! B.\nuse crate::a::X;\npub struct Y;\n"),
        ]);
        assert_circle(
            &violations,
            &["a.rs", "b.rs"],
            &[
                ("a.rs", "b.rs", "crate::b::Y"),
                ("b.rs", "a.rs", "crate::a::X"),
            ],
        );
    }

    #[test]
    fn follows_the_root_s_re_exports_to_the_defining_module() {
        for export in [
            "pub use a::X;",
            "pub use crate::a::X;",
            "pub use self::a::X;",
        ] {
            let lib = format!("//! Demo.\nmod a;\nmod b;\n{export}\npub use b::Y;\n");
            let violations = check(&[
                ("lib.rs", &lib),
                ("a.rs", "//! A.\nuse crate::Y;\npub struct X;\n"),
                ("b.rs", "//! B.\nuse crate::X;\npub struct Y;\n"),
            ]);
            // The root re-exports both, but nothing imports the root: it is not in the circle.
            assert_circle(
                &violations,
                &["a.rs", "b.rs"],
                &[("a.rs", "b.rs", "crate::Y"), ("b.rs", "a.rs", "crate::X")],
            );
        }
    }

    #[test]
    fn follows_re_exports_of_a_module_with_submodules() {
        let violations = check(&[
            ("lib.rs", "//! Demo.\nmod s;\n"),
            (
                "s/mod.rs",
                "//! S.\nmod x;\nmod y;\npub use x::X;\npub use y::*;\n",
            ),
            ("s/x.rs", "//! X.\nuse crate::s::Y;\npub struct X;\n"),
            ("s/y.rs", "//! Y.\nuse crate::s::X;\npub struct Y;\n"),
        ]);
        assert_circle(
            &violations,
            &["s/x.rs", "s/y.rs"],
            &[
                ("s/x.rs", "s/y.rs", "crate::s::Y"),
                ("s/y.rs", "s/x.rs", "crate::s::X"),
            ],
        );
    }

    #[test]
    fn fires_on_an_item_of_the_root_that_its_re_exported_modules_import() {
        // The root is both the bottom (it defines `Store`) and the top (it re-exports `a`).
        let violations = check(&[
            (
                "lib.rs",
                "//! Demo.\nmod a;\npub use a::A;\npub trait Store {}\n",
            ),
            ("a.rs", "//! A.\nuse crate::Store;\npub struct A;\n"),
        ]);
        assert_circle(
            &violations,
            &["a.rs", "lib.rs"],
            &[
                ("a.rs", "lib.rs", "crate::Store"),
                ("lib.rs", "a.rs", "a::A"),
            ],
        );
    }

    #[test]
    fn fires_on_a_circle_through_super() {
        let violations = check(&[
            ("lib.rs", "//! Demo.\nmod m;\n"),
            (
                "m.rs",
                "//! M.\nmod c;\npub use self::c::C;\npub struct P;\n",
            ),
            ("m/c.rs", "//! C.\nuse super::P;\npub struct C;\n"),
        ]);
        assert_circle(
            &violations,
            &["m.rs", "m/c.rs"],
            &[
                ("m.rs", "m/c.rs", "self::c::C"),
                ("m/c.rs", "m.rs", "super::P"),
            ],
        );
        let glob = check(&[
            ("lib.rs", "//! Demo.\nmod m;\n"),
            ("m/mod.rs", "//! M.\nmod c;\npub fn f() {\n    c::g();\n}\n"),
            ("m/c.rs", "//! C.\nuse super::*;\npub fn g() {}\n"),
        ]);
        assert_circle(
            &glob,
            &["m/c.rs", "m/mod.rs"],
            &[
                ("m/c.rs", "m/mod.rs", "super::*"),
                ("m/mod.rs", "m/c.rs", "c::g"),
            ],
        );
    }

    #[test]
    fn fires_on_a_circle_through_paths_in_code() {
        let violations = check(&[
            ("lib.rs", "//! Demo.\nmod a;\nmod b;\n"),
            (
                "a.rs",
                "//! A.\npub fn f() -> u8 {\n    crate::b::g::<u8>()\n}\n",
            ),
            (
                "b.rs",
                "//! B.\npub fn g<T>() -> u8 {\n    let f: fn() -> u8 = crate::a::f;\n    f()\n}\n",
            ),
        ]);
        assert_circle(
            &violations,
            &["a.rs", "b.rs"],
            &[
                ("a.rs", "b.rs", "crate::b::g"),
                ("b.rs", "a.rs", "crate::a::f"),
            ],
        );
        // A module bound by `use` leads the paths that start with its name.
        let aliased = check(&[
            ("lib.rs", "//! Demo.\nmod a;\nmod b;\n"),
            (
                "a.rs",
                "//! A.\nuse crate::b;\npub fn f() {\n    b::inner::g();\n}\n",
            ),
            ("b.rs", "//! B.\npub mod inner;\n"),
            (
                "b/inner.rs",
                "//! Inner.\npub fn g() {\n    crate::a::f();\n}\n",
            ),
        ]);
        assert_circle(
            &aliased,
            &["a.rs", "b/inner.rs"],
            &[
                ("a.rs", "b/inner.rs", "b::inner::g"),
                ("b/inner.rs", "a.rs", "crate::a::f"),
            ],
        );
    }

    #[test]
    fn expands_nested_use_groups() {
        let violations = check(&[
            ("lib.rs", "//! Demo.\nmod a;\nmod b;\nmod c;\n"),
            (
                "a.rs",
                "//! A.\nuse crate::{\n    b::{self, B},\n    c::{C, D as E},\n};\npub struct A;\n",
            ),
            ("b.rs", "//! B.\npub struct B;\n"),
            (
                "c.rs",
                "//! C.\nuse crate::a::A;\npub struct C;\npub struct D;\n",
            ),
        ]);
        assert_circle(
            &violations,
            &["a.rs", "c.rs"],
            &[
                ("a.rs", "c.rs", "crate::c::C"),
                ("c.rs", "a.rs", "crate::a::A"),
            ],
        );
        let self_leaf = check(&[
            ("lib.rs", "//! Demo.\nmod a;\nmod b;\n"),
            ("a.rs", "//! A.\nuse crate::{b::{self}};\npub struct A;\n"),
            ("b.rs", "//! B.\nuse crate::a::{A as Renamed};\n"),
        ]);
        assert_circle(
            &self_leaf,
            &["a.rs", "b.rs"],
            &[
                ("a.rs", "b.rs", "crate::b"),
                ("b.rs", "a.rs", "crate::a::A"),
            ],
        );
    }

    #[test]
    fn comments_and_literals_make_no_edge() {
        let b = r####"//! B: imports `crate::a::A` in docs only.
// use crate::a::A;
/// See crate::a::A.
/* crate::a::A /* nested crate::a::A */ crate::a::A */
const S: &str = "crate::a::A \" crate::a::A";
const R: &str = r#"crate::a::A "quoted" crate::a::A"#;
const Q: char = '"';
const Y: &[u8] = b"crate::a::A";
fn f<'a>(x: &'a str) -> &'a str {
    let _ = ('\'', '\\', b'"');
    x
}
pub struct B;
"####;
        assert_eq!(
            check(&[
                ("lib.rs", "//! Demo.\nmod a;\nmod b;\n"),
                ("a.rs", "//! A.\nuse crate::b::B;\npub struct A;\n"),
                ("b.rs", b),
            ]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_layered_crate_behind_a_re_exporting_root_is_quiet() {
        let layered = [
            (
                "lib.rs",
                "//! Demo.\nmod a;\nmod b;\nmod c;\npub use a::A;\npub use crate::b::B;\n\
                 pub use self::c::{C, D};\npub use fact_model::Tag;\n",
            ),
            (
                "a.rs",
                "//! A.\nuse crate::{B, Tag};\npub struct A(B, Tag);\n",
            ),
            (
                "b.rs",
                "//! B.\nuse crate::C;\npub struct B(C);\nfn f() -> crate::D {\n    crate::D\n}\n",
            ),
            ("c.rs", "//! C.\npub struct C;\npub struct D;\n"),
        ];
        assert_eq!(check(&layered), Vec::<String>::new());
    }

    #[test]
    fn test_modules_visibility_and_other_roots_make_no_circle() {
        let quiet = [
            ("lib.rs", "//! Demo.\nmod m;\n#[cfg(test)]\nmod tests;\n"),
            ("tests.rs", "//! Tests.\nuse super::*;\nuse crate::m::C;\n"),
            (
                "m.rs",
                "//! M.\nmod c;\npub use self::c::C;\n#[cfg(test)]\nmod tests {\n    \
                 use super::*;\n}\n",
            ),
            (
                "m/c.rs",
                "//! C.\npub(super) struct C;\npub(crate) fn g() {}\n\
                 pub(in crate::m) fn h() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    \
                 use super::super::C;\n}\n",
            ),
            ("main.rs", "//! Binary.\nfn main() {\n    demo::m::C;\n}\n"),
            ("bin/tool.rs", "//! Tool.\nuse crate::m;\n"),
        ];
        assert_eq!(check(&quiet), Vec::<String>::new());
    }

    #[test]
    fn reports_one_violation_per_circle() {
        let violations = check(&[
            (
                "lib.rs",
                "//! Demo.\nmod a;\nmod b;\nmod c;\nmod d;\nmod e;\n",
            ),
            ("a.rs", "//! A.\nuse crate::b::B;\n"),
            ("b.rs", "//! B.\nuse crate::c::C;\n"),
            ("c.rs", "//! C.\nuse crate::a::A;\nuse crate::d::D;\n"),
            ("d.rs", "//! D.\nuse crate::e::E;\n"),
            ("e.rs", "//! E.\nuse crate::d::D;\n"),
        ]);
        assert_eq!(violations.len(), 2, "{violations:#?}");
        assert_circle(
            &violations[..1],
            &["a.rs", "b.rs", "c.rs"],
            &[
                ("a.rs", "b.rs", "crate::b::B"),
                ("b.rs", "c.rs", "crate::c::C"),
                ("c.rs", "a.rs", "crate::a::A"),
            ],
        );
        assert!(!violations[0].contains("d.rs"), "{violations:#?}");
        assert_circle(
            &violations[1..],
            &["d.rs", "e.rs"],
            &[
                ("d.rs", "e.rs", "crate::e::E"),
                ("e.rs", "d.rs", "crate::d::D"),
            ],
        );
    }
}
