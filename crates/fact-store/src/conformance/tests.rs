//! Checks that [`conformance_suite!`](crate::conformance_suite) makes a test of every
//! public function of every conformance module, reading the kit's own sources: a function
//! added to the suite but not to the macro would otherwise never run.

/// The kit's root: it declares the modules and defines the macro.
const ROOT: &str = include_str!("../conformance.rs");

/// Each conformance module, by name, with its source.
const MODULES: &[(&str, &str)] = &[
    ("compaction", include_str!("compaction.rs")),
    ("crud", include_str!("crud.rs")),
    ("export", include_str!("export.rs")),
    ("filters", include_str!("filters.rs")),
    ("long_term", include_str!("long_term.rs")),
    ("metadata", include_str!("metadata.rs")),
    ("search", include_str!("search.rs")),
    ("snapshot", include_str!("snapshot.rs")),
    ("temporal", include_str!("temporal.rs")),
    ("token_vectors", include_str!("token_vectors.rs")),
    ("transaction", include_str!("transaction.rs")),
    ("vectors", include_str!("vectors.rs")),
];

/// The public modules of the kit that hold no conformance functions.
const NOT_SUITES: &[&str] = &[
    "durable",
    "memories",
    "properties",
    "stress",
    "token_properties",
];

/// The names of the public functions `source` defines at its top level.
fn public_functions(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter_map(|line| line.strip_prefix("pub fn "))
        .filter_map(|rest| rest.split('(').next())
        .collect()
}

/// The function names the macro in `root` lists for `module`, or `None` when it lists no
/// such module: the lines between `module: [` and the next `]`.
fn macro_list<'a>(root: &'a str, module: &str) -> Option<Vec<&'a str>> {
    let body = root.split("macro_rules! conformance_suite").nth(1)?;
    let opening = format!("{module}: [");
    let mut lines = body.lines().skip_while(|line| line.trim() != opening);
    lines.next()?;
    Some(
        lines
            .take_while(|line| !line.trim().starts_with(']'))
            .map(|line| line.trim().trim_end_matches(','))
            .filter(|name| !name.is_empty())
            .collect(),
    )
}

/// What keeps `root`'s macro from running exactly the public functions of `module`
/// (whose source is `source`): each function it leaves out, each name it lists that the
/// module does not define, or the module missing from the macro.
fn mismatches(root: &str, module: &str, source: &str) -> Vec<String> {
    let defined = public_functions(source);
    let Some(listed) = macro_list(root, module) else {
        return vec![format!("the macro lists no module `{module}`")];
    };
    let mut problems: Vec<String> = defined
        .iter()
        .filter(|name| !listed.contains(name))
        .map(|name| format!("`{module}::{name}` is missing from `conformance_suite!`"))
        .collect();
    problems.extend(
        listed
            .iter()
            .filter(|name| !defined.contains(name))
            .map(|name| {
                format!(
                    "`conformance_suite!` lists `{module}::{name}`, which is not a public function"
                )
            }),
    );
    problems
}

/// The public modules `root` declares, other than [`NOT_SUITES`].
fn declared_suites(root: &str) -> Vec<&str> {
    root.lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';'))
        .filter(|name| !NOT_SUITES.contains(name))
        .collect()
}

#[test]
fn the_macro_runs_every_public_function_of_every_conformance_module() {
    let problems: Vec<String> = MODULES
        .iter()
        .flat_map(|(module, source)| mismatches(ROOT, module, source))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let functions: usize = MODULES
        .iter()
        .map(|(_, source)| public_functions(source).len())
        .sum();
    assert!(functions >= 72, "the suite shrank to {functions} functions");
}

#[test]
fn every_declared_conformance_module_is_checked() {
    let checked: Vec<&str> = MODULES.iter().map(|(module, _)| *module).collect();
    assert_eq!(declared_suites(ROOT), checked);
}

/// A kit in miniature: a root whose macro lists `crud`'s two functions.
const SMALL_ROOT: &str = "\
pub mod crud;
pub mod properties;

macro_rules! conformance_suite {
    ($fixture:expr) => {
        $crate::conformance_suite!(@tests $fixture;
            crud: [
                update_errors_are_typed,
                tags_filter_is_any_of,
            ];
        );
    };
}
";

#[test]
fn the_check_passes_a_module_the_macro_lists_whole() {
    let source = "//! Crud.\n\n/// One.\npub fn update_errors_are_typed(fixture: &dyn Fixture) {}\n\n\
                  fn helper() {}\n\n/// Two.\npub fn tags_filter_is_any_of(fixture: &dyn Fixture) {}\n";
    assert_eq!(mismatches(SMALL_ROOT, "crud", source), Vec::<String>::new());
    assert_eq!(declared_suites(SMALL_ROOT), ["crud"]);
}

#[test]
fn the_check_fails_on_a_function_the_macro_leaves_out_or_names_wrongly() {
    let source = "pub fn update_errors_are_typed(fixture: &dyn Fixture) {}\n\
                  pub fn tags_filter_is_any_of(fixture: &dyn Fixture) {}\n\
                  pub fn a_new_test(fixture: &dyn Fixture) {}\n";
    assert_eq!(
        mismatches(SMALL_ROOT, "crud", source),
        ["`crud::a_new_test` is missing from `conformance_suite!`"]
    );
    let renamed = "pub fn update_errors_are_typed(fixture: &dyn Fixture) {}\n\
                   pub fn tags_filter_matches_any(fixture: &dyn Fixture) {}\n";
    assert_eq!(
        mismatches(SMALL_ROOT, "crud", renamed),
        [
            "`crud::tags_filter_matches_any` is missing from `conformance_suite!`",
            "`conformance_suite!` lists `crud::tags_filter_is_any_of`, which is not a public function",
        ]
    );
}

#[test]
fn the_check_fails_on_a_module_the_macro_does_not_list() {
    let source = "pub fn six_hundred_results(fixture: &dyn Fixture) {}\n";
    assert_eq!(
        mismatches(SMALL_ROOT, "compaction", source),
        ["the macro lists no module `compaction`"]
    );
    // `vectors: [` is not found inside `token_vectors: [`.
    let root = SMALL_ROOT.replace("crud: [", "token_vectors: [");
    assert_eq!(macro_list(&root, "vectors"), None);
}
