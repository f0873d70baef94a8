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
                "dispatch-runtime",
                true,
                &[
                    ("fact-store", Normal),
                    ("fact-extract", Normal),
                    ("factmem-ledger", Build),
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
            krate("xtask", false, &[("serde_json", Dev)]),
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
        ] {
            assert_one(
                &violations_with(service, "dispatch-runtime", Dev),
                service,
                "3",
            );
        }
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
