//! [`Failure`]: why a command failed, the message for stderr and the exit code.

/// Why a command failed: the message for stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) exit: u8,
}

/// The exit code of a failed request or operation.
pub(crate) const EXIT_FAILED: u8 = 1;
/// The exit code of a usage error or unreadable input.
pub(crate) const EXIT_USAGE: u8 = 2;
/// The exit code of something looked up by name or id that does not exist.
pub(crate) const EXIT_NOT_FOUND: u8 = 3;

impl Failure {
    /// A request or operation failed: exit code 1.
    pub(crate) fn failed(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_FAILED,
        }
    }

    /// A usage error or unreadable input: exit code 2.
    pub(crate) fn usage(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_USAGE,
        }
    }

    /// Not found: exit code 3.
    pub(crate) fn not_found(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_NOT_FOUND,
        }
    }
}

/// A failure of a command that knows only usage errors: exit code 2.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::usage(message)
    }
}
