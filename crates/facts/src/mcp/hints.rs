//! [`Hints`]: what a tool's annotations tell a client besides whether it only reads.

use rmcp::model::{Tool, ToolAnnotations};

/// What a tool's annotations say besides whether it only reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hints {
    /// The title a client shows.
    pub(crate) title: &'static str,
    /// Whether a call may destroy something a later call could have read.
    pub(crate) destructive: bool,
    /// Whether a second call with the same arguments changes nothing more.
    pub(crate) idempotent: bool,
    /// Whether a call may reach outside this server (a model command).
    pub(crate) open_world: bool,
}

impl Hints {
    /// A read-only tool's hints: nothing destroyed, repeatable, a closed world.
    pub(super) const fn reads(title: &'static str) -> Hints {
        Hints {
            title,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    /// `tool` with this title and these annotations.
    pub(crate) fn apply(self, tool: Tool, read_only: bool) -> Tool {
        let annotations = ToolAnnotations::with_title(self.title)
            .read_only(read_only)
            .destructive(self.destructive)
            .idempotent(self.idempotent)
            .open_world(self.open_world);
        tool.with_title(self.title).annotate(annotations)
    }
}
