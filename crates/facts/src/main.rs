//! `facts`: the command line on top of the dispatch runtime. The commands live in the
//! package's library (`lib.rs`); this is only its entry point.

fn main() -> std::process::ExitCode {
    facts::run()
}
