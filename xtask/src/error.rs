//! [`Error`]: why a subcommand failed, which decides the exit code; and [`no_args`], the
//! usage error of a subcommand that takes no arguments.

/// Why a subcommand failed. The variant decides the process exit code.
#[derive(Debug)]
pub(crate) enum Error {
    /// The command line was wrong; exit code 2 and the usage text.
    Usage(String),
    /// The subcommand ran and failed; exit code 1.
    Failed(String),
}

/// Rejects any arguments, for subcommands that take none.
pub(crate) fn no_args(subcommand: &str, args: &[String]) -> Result<(), Error> {
    match args.first() {
        None => Ok(()),
        Some(arg) => Err(Error::Usage(format!(
            "`{subcommand}` takes no arguments, got `{arg}`"
        ))),
    }
}
