//! [`CommandLlm`]: an [`LlmClient`] that runs a shell command line, prompt on stdin, reply
//! on stdout.

use std::io::{self, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use fact_model::clip;

use super::client::{ERROR_TAIL_CHARS, LlmClient, LlmError, clip_tail};

/// How often the exit status is checked once the output is complete or while waiting.
const POLL: Duration = Duration::from_millis(5);
/// Bytes of stderr kept while reading: enough for the [`ERROR_TAIL_CHARS`] of the tail,
/// even of 4-byte characters after a cut through one.
const STDERR_KEEP_BYTES: usize = 4 * ERROR_TAIL_CHARS + 4;

/// Runs a shell command line as the model: `sh -c COMMAND`, the prompt written to its
/// stdin, its stdout (UTF-8) the reply.
///
/// The command is a *shell command line*, so it may hold arguments, quotes, pipes and
/// redirections (`llm -m claude-haiku`, `ollama run llama3`, `claude -p`); it needs a
/// POSIX `sh` on `PATH`. The child inherits the environment and working directory.
///
/// - The prompt is written from a separate thread and stdout and stderr are read from
///   others, so a child that answers before reading all its input cannot deadlock.
/// - When the command has not exited with its output closed within the timeout, it is
///   killed and the call returns [`LlmError::Timeout`]. (Processes the command line started
///   in the background are not killed.) The timeout is measured by waiting, never by
///   reading the clock.
/// - A non-zero exit returns [`LlmError::Exit`] with the code and the last
///   [`ERROR_TAIL_CHARS`] characters of stderr; stdout that is not UTF-8, or longer than
///   [`max_reply_bytes`](Self::max_reply_bytes), returns [`LlmError::InvalidReply`].
///
/// ```
/// use std::time::Duration;
/// use fact_extract::{CommandLlm, LlmClient, LlmError};
///
/// let echo = CommandLlm::new("tr a-z A-Z", Duration::from_secs(5));
/// assert_eq!(echo.complete("hello")?, "HELLO");
///
/// let failing = CommandLlm::new("echo 'no model' >&2; exit 3", Duration::from_secs(5));
/// let err = failing.complete("hello").unwrap_err();
/// assert!(matches!(err, LlmError::Exit { code: Some(3), ref stderr_tail } if stderr_tail == "no model\n"));
/// # Ok::<(), LlmError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLlm {
    command: String,
    timeout: Duration,
    max_reply_bytes: usize,
}

impl CommandLlm {
    /// Default of [`max_reply_bytes`](Self::max_reply_bytes): 8 MiB.
    pub const DEFAULT_MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

    /// A client that runs the shell command line `command`, waiting at most `timeout`.
    #[must_use]
    pub fn new(command: impl Into<String>, timeout: Duration) -> Self {
        CommandLlm {
            command: command.into(),
            timeout,
            max_reply_bytes: Self::DEFAULT_MAX_REPLY_BYTES,
        }
    }

    /// The same client with another limit on the reply's size.
    #[must_use]
    pub fn with_max_reply_bytes(mut self, max_reply_bytes: usize) -> Self {
        self.max_reply_bytes = max_reply_bytes;
        self
    }

    /// The shell command line.
    #[must_use]
    pub fn command(&self) -> &str {
        &self.command
    }

    /// How long a call may take.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The longest reply accepted, in bytes; the rest of a longer one is read and discarded
    /// so the command is not blocked.
    #[must_use]
    pub fn max_reply_bytes(&self) -> usize {
        self.max_reply_bytes
    }

    fn spawn(&self) -> Result<Child, LlmError> {
        Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| LlmError::Spawn {
                command: clip(&self.command, 200).into_owned(),
                source: error.into(),
            })
    }

    /// Waits, without reading the clock, until the child has exited and both output
    /// streams are complete, or until the timeout has been spent waiting.
    fn wait(
        &self,
        child: &mut Child,
        events: &Receiver<Output>,
    ) -> Result<Option<Finished>, LlmError> {
        let mut stdout = None;
        let mut stderr = None;
        let mut status = None;
        let mut waited = Duration::ZERO;
        loop {
            if status.is_none() {
                status = child.try_wait().map_err(LlmError::io)?;
            }
            match (status, stdout, stderr) {
                (Some(status), Some(out), Some(err)) => {
                    return Ok(Some(Finished {
                        status,
                        stdout: out,
                        stderr: err,
                    }));
                }
                (s, out, err) => (status, stdout, stderr) = (s, out, err),
            }
            if waited >= self.timeout {
                return Ok(None);
            }
            let step = POLL.min(self.timeout.saturating_sub(waited));
            match events.recv_timeout(step) {
                Ok(Output::Stdout(result)) => stdout = Some(result),
                Ok(Output::Stderr(bytes)) => stderr = Some(bytes),
                Err(RecvTimeoutError::Timeout) => waited += step,
                Err(RecvTimeoutError::Disconnected) => {
                    // Both readers are done; only the exit is missing.
                    thread::sleep(step);
                    waited += step;
                }
            }
        }
    }
}

/// What a reader thread sends when its stream is closed.
enum Output {
    Stdout(io::Result<Captured>),
    Stderr(Vec<u8>),
}

/// Stdout as read: the first bytes, and whether there were more.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    overflowed: bool,
}

struct Finished {
    status: ExitStatus,
    stdout: io::Result<Captured>,
    stderr: Vec<u8>,
}

impl LlmClient for CommandLlm {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        let mut child = self.spawn()?;
        let (sender, events) = mpsc::channel();
        if let Some(mut stdin) = child.stdin.take() {
            let prompt = prompt.to_owned();
            thread::spawn(move || {
                // A command may exit without reading its input: a broken pipe is its choice.
                if let Err(error) = stdin.write_all(prompt.as_bytes())
                    && error.kind() != io::ErrorKind::BrokenPipe
                {
                    tracing::debug!(%error, "writing the prompt to the command failed");
                }
            });
        }
        if let Some(stdout) = child.stdout.take() {
            read_stdout(stdout, self.max_reply_bytes, sender.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            read_stderr(stderr, sender);
        }
        let finished = match self.wait(&mut child, &events) {
            Ok(Some(finished)) => finished,
            Ok(None) => {
                kill(&mut child);
                tracing::warn!(command = %self.command, timeout = ?self.timeout, "LLM command timed out");
                return Err(LlmError::Timeout {
                    after: self.timeout,
                });
            }
            Err(error) => {
                kill(&mut child);
                return Err(error);
            }
        };
        if !finished.status.success() {
            let stderr = String::from_utf8_lossy(&finished.stderr);
            return Err(LlmError::Exit {
                code: finished.status.code(),
                stderr_tail: clip_tail(&stderr, ERROR_TAIL_CHARS),
            });
        }
        let stdout = finished.stdout.map_err(LlmError::io)?;
        if stdout.overflowed {
            return Err(LlmError::InvalidReply(format!(
                "the command's output exceeds {} bytes",
                self.max_reply_bytes
            )));
        }
        String::from_utf8(stdout.bytes).map_err(|error| {
            LlmError::InvalidReply(format!("the command's output is not UTF-8: {error}"))
        })
    }
}

/// Kills and reaps `child`; both fail only when it already exited, which is fine.
fn kill(child: &mut Child) {
    if let Err(error) = child.kill() {
        tracing::debug!(%error, "killing the command failed");
    }
    if let Err(error) = child.wait() {
        tracing::debug!(%error, "reaping the command failed");
    }
}

/// Reads all of `stdout` in a thread, keeping the first `max` bytes.
fn read_stdout(mut stdout: impl Read + Send + 'static, max: usize, sender: Sender<Output>) {
    thread::spawn(move || {
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        let mut bytes = Vec::new();
        let result = (&mut stdout)
            .take(limit)
            .read_to_end(&mut bytes)
            .and_then(|_| {
                let overflowed = bytes.len() > max;
                if overflowed {
                    bytes.truncate(max);
                    // Drain the rest so the command is not blocked writing it.
                    io::copy(&mut stdout, &mut io::sink())?;
                }
                Ok(Captured { bytes, overflowed })
            });
        // The receiver is gone only when the call already returned.
        let _ = sender.send(Output::Stdout(result));
    });
}

/// Reads all of `stderr` in a thread, keeping only its tail.
fn read_stderr(mut stderr: impl Read + Send + 'static, sender: Sender<Output>) {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match stderr.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => {
                    kept.extend_from_slice(buffer.get(..read).unwrap_or_default());
                    if kept.len() > 2 * STDERR_KEEP_BYTES {
                        kept.drain(..kept.len().saturating_sub(STDERR_KEEP_BYTES));
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if kept.len() > STDERR_KEEP_BYTES {
            kept.drain(..kept.len().saturating_sub(STDERR_KEEP_BYTES));
        }
        // The receiver is gone only when the call already returned.
        let _ = sender.send(Output::Stderr(kept));
    });
}
