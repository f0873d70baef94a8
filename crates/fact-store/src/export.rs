//! A scope's memory as a versioned JSON Lines file: [`ExportRecord`] (one line),
//! [`ExportWriter`] and [`ExportReader`] (the file's framing: a header first, an end
//! record last that counts the records and holds a digest of every byte before it), and
//! [`ExportSource`], what [`LongTermStore::import_from`](crate::LongTermStore::import_from)
//! reads.
//!
//! The format is specified in `docs/export-format.md`; its JSON Schema is
//! `facts schema export`.
//!
//! ```
//! use fact_store::{
//!     ExportHeader, ExportOptions, ExportReader, ExportRecord, ExportText, ExportWriter,
//!     InMemoryLongTermStore, LongTermStore, MemoryWrite, ProfileEntry,
//! };
//! use fact_model::{ProfileField, Timestamp};
//!
//! let store = InMemoryLongTermStore::default();
//! let at = Timestamp::from_unix_secs(1_800_000_000)?;
//! let mut write = MemoryWrite::default();
//! write.profile.push(ProfileEntry { field: ProfileField::Work, text: "Nurse".into(), at });
//! store.commit(write)?;
//!
//! let mut writer = ExportWriter::new(Vec::new(), &ExportHeader::new("default", None))?;
//! store.export_to(&ExportOptions::default(), &mut |record| writer.write_record(&record))?;
//! let (file, end) = writer.finish()?;
//! assert_eq!(end.records, 1);
//!
//! let copy = InMemoryLongTermStore::default();
//! let report = copy.import_from(&ExportText::new(file.clone()))?;
//! assert_eq!(report.profile_versions, 1);
//! // Importing the same file again changes nothing.
//! assert_eq!(copy.import_from(&ExportText::new(file))?.unchanged, 1);
//! assert_eq!(copy.profile()?[0].text, "Nurse");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fact_model::Timestamp;
use serde::{Deserialize, Serialize};

use crate::side::{Alias, ProfileEntry};
use crate::{Episode, SnapshotRecord, StoreError, StoreResult};

/// The `format` of an export's header.
pub const EXPORT_FORMAT: &str = "factmem-export";

/// The export format version this crate writes, and the newest it reads.
pub const EXPORT_VERSION: u64 = 1;

/// The longest line an [`ExportReader`] reads (an episode with its messages is one line):
/// 64 MiB.
pub const MAX_EXPORT_LINE: usize = 64 << 20;

/// One line of an export file, tagged by its `type`.
///
/// A file is a [`Header`](Self::Header), then the records of the scope in this order
/// (every version of every fact, oldest first; the episodes with their messages; the
/// aliases; every profile version, oldest first), then an [`End`](Self::End).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExportRecord {
    /// The first line.
    Header(ExportHeader),
    /// One version of a fact, with the batch that stored it.
    Fact(SnapshotRecord),
    /// An episode, with its messages.
    Episode(Episode),
    /// An alias.
    Alias(Alias),
    /// One version of a profile field.
    Profile(ProfileEntry),
    /// The last line.
    End(ExportEnd),
}

impl ExportRecord {
    /// The record's `type`, as written.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            ExportRecord::Header(_) => "header",
            ExportRecord::Fact(_) => "fact",
            ExportRecord::Episode(_) => "episode",
            ExportRecord::Alias(_) => "alias",
            ExportRecord::Profile(_) => "profile",
            ExportRecord::End(_) => "end",
        }
    }
}

/// The first line of an export: what it is and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExportHeader {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// The format version the file was written in.
    pub version: u64,
    /// The scope it was exported from.
    pub scope: String,
    /// The instant the export shows the memory as of, when not the time of the export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Timestamp>,
}

impl ExportHeader {
    /// The header of an export of `scope` in this crate's version, as of `as_of`.
    #[must_use]
    pub fn new(scope: impl Into<String>, as_of: Option<Timestamp>) -> Self {
        ExportHeader {
            format: EXPORT_FORMAT.to_owned(),
            version: EXPORT_VERSION,
            scope: scope.into(),
            as_of,
        }
    }
}

/// The last line of an export: how many records are between it and the header, and the
/// BLAKE3 digest (hex) of every byte before it. A file cut short, or changed, fails them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExportEnd {
    /// The records between the header and this line.
    pub records: u64,
    /// The BLAKE3 digest of the file up to this line, as 64 lowercase hex digits.
    pub digest: String,
}

/// What a store exports.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Export the memory as it was at this instant ([`SessionFact::known_at`]): only what
    /// was valid or recorded by then, and a version that ended later as still valid. The
    /// episodes archived by then, the aliases set by then, the profile versions written by
    /// then.
    ///
    /// [`SessionFact::known_at`]: fact_model::SessionFact::known_at
    pub as_of: Option<Timestamp>,
}

impl ExportOptions {
    /// Exports the memory as of `at`.
    #[must_use]
    pub fn with_as_of(mut self, at: Timestamp) -> Self {
        self.as_of = Some(at);
        self
    }

    /// `record` as this export writes it: `None` when it is later than
    /// [`as_of`](Self::as_of), the fact as known then otherwise.
    #[must_use]
    pub fn keep(&self, record: ExportRecord) -> Option<ExportRecord> {
        let Some(at) = self.as_of else {
            return Some(record);
        };
        match record {
            ExportRecord::Fact(SnapshotRecord { batch, fact }) => fact
                .known_at(at)
                .map(|fact| ExportRecord::Fact(SnapshotRecord { batch, fact })),
            ExportRecord::Episode(episode) => {
                (episode.created_at <= at).then_some(ExportRecord::Episode(episode))
            }
            ExportRecord::Alias(alias) => (alias.at <= at).then_some(ExportRecord::Alias(alias)),
            ExportRecord::Profile(entry) => {
                (entry.at <= at).then_some(ExportRecord::Profile(entry))
            }
            other => Some(other),
        }
    }
}

/// Writes an export: the header when made, a line per [`write_record`](Self::write_record),
/// and the end record at [`finish`](Self::finish). A writer dropped without `finish`
/// leaves a file every reader refuses as truncated.
#[derive(Debug)]
pub struct ExportWriter<W: Write> {
    out: W,
    hasher: blake3::Hasher,
    records: u64,
    line: Vec<u8>,
}

impl<W: Write> ExportWriter<W> {
    /// Starts an export to `out` with `header`.
    ///
    /// # Errors
    ///
    /// The error of writing to `out`.
    pub fn new(out: W, header: &ExportHeader) -> io::Result<Self> {
        let mut writer = ExportWriter {
            out,
            hasher: blake3::Hasher::new(),
            records: 0,
            line: Vec::with_capacity(1024),
        };
        writer.line(&ExportRecord::Header(header.clone()))?;
        Ok(writer)
    }

    /// Writes `record` as the next line. A header or an end record is refused
    /// ([`StoreError::Backend`]): the writer writes those itself.
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when `out` cannot be written.
    pub fn write_record(&mut self, record: &ExportRecord) -> StoreResult<()> {
        if matches!(record, ExportRecord::Header(_) | ExportRecord::End(_)) {
            return Err(StoreError::Backend {
                message: format!(
                    "an export's {} line is written by its writer",
                    record.kind()
                ),
            });
        }
        self.line(record).map_err(|e| StoreError::Io {
            message: format!("writing the export: {e}"),
        })?;
        self.records += 1;
        Ok(())
    }

    fn line(&mut self, record: &ExportRecord) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record)?;
        self.line.push(b'\n');
        self.hasher.update(&self.line);
        self.out.write_all(&self.line)
    }

    /// Writes the end record, flushes, and returns the output and the end record.
    ///
    /// # Errors
    ///
    /// The error of writing to `out`.
    pub fn finish(mut self) -> io::Result<(W, ExportEnd)> {
        let end = ExportEnd {
            records: self.records,
            digest: self.hasher.finalize().to_hex().to_string(),
        };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &ExportRecord::End(end.clone()))?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.out.flush()?;
        Ok((self.out, end))
    }
}

/// Reads an export line by line, checking its framing: the header first (a file of
/// another format, or of a newer version, is refused before any record), each line a
/// record, and an end record whose count and digest match what came before. Yields the
/// records between header and end; the first error ends them (a file cut short fails at
/// its end), and every error names its line.
#[derive(Debug)]
pub struct ExportReader<R> {
    input: R,
    header: ExportHeader,
    /// The number of the last line read.
    line: u64,
    hasher: blake3::Hasher,
    records: u64,
    ended: bool,
    failed: bool,
    buffer: Vec<u8>,
}

impl<R: BufRead> ExportReader<R> {
    /// Reads and checks the header of the export in `input`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Export`] (line 1) for a file that is not an export,
    /// [`StoreError::ExportVersion`] for one of a newer version, [`StoreError::Io`] when
    /// `input` cannot be read.
    pub fn new(mut input: R) -> StoreResult<Self> {
        let mut buffer = Vec::new();
        let not_an_export = |why: &str| StoreError::Export {
            line: 1,
            message: format!("not a {EXPORT_FORMAT} file: {why}"),
        };
        if !read_line(&mut input, &mut buffer, 1)? {
            return Err(not_an_export("it is empty"));
        }
        let header = match serde_json::from_slice::<ExportRecord>(&buffer) {
            Ok(ExportRecord::Header(header)) if header.format == EXPORT_FORMAT => header,
            Ok(ExportRecord::Header(header)) => {
                return Err(not_an_export(&format!(
                    "its format is {:?}",
                    fact_model::clip(&header.format, 64)
                )));
            }
            Ok(_) | Err(_) => {
                return Err(not_an_export(&format!(
                    "its first line is not a header such as {{\"type\":\"header\",\"format\":\"{EXPORT_FORMAT}\",\"version\":{EXPORT_VERSION},...}}"
                )));
            }
        };
        if header.version > EXPORT_VERSION || header.version == 0 {
            return Err(StoreError::ExportVersion {
                found: header.version,
                supported: EXPORT_VERSION,
            });
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(&buffer);
        Ok(ExportReader {
            input,
            header,
            line: 1,
            hasher,
            records: 0,
            ended: false,
            failed: false,
            buffer,
        })
    }

    /// The file's header.
    #[must_use]
    pub fn header(&self) -> &ExportHeader {
        &self.header
    }

    /// The number of the last line read (the header is line 1).
    #[must_use]
    pub fn line(&self) -> u64 {
        self.line
    }

    fn error(&self, message: impl Into<String>) -> StoreError {
        StoreError::Export {
            line: self.line,
            message: message.into(),
        }
    }

    fn next_record(&mut self) -> StoreResult<Option<ExportRecord>> {
        loop {
            let line = self.line + 1;
            if !read_line(&mut self.input, &mut self.buffer, line)? {
                if self.ended {
                    return Ok(None);
                }
                return Err(self.error(format!(
                    "the file ends after line {} without its end record: it was cut short",
                    self.line
                )));
            }
            self.line = line;
            if self.ended {
                let another = matches!(
                    serde_json::from_slice::<ExportRecord>(&self.buffer),
                    Ok(ExportRecord::Header(_))
                );
                return Err(self.error(if another {
                    "another export follows the end record (a file of several scopes): \
                     import it scope by scope (`facts mem import --all-scopes`)"
                } else {
                    "a line after the end record"
                }));
            }
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                return Err(self.error("an empty line (each line of an export is one record)"));
            }
            let record: ExportRecord = serde_json::from_slice(&self.buffer)
                .map_err(|e| self.error(format!("not a valid record: {e}")))?;
            match record {
                ExportRecord::Header(_) => return Err(self.error("a second header")),
                ExportRecord::End(end) => {
                    if end.records != self.records {
                        return Err(self.error(format!(
                            "the end record counts {} records, the file holds {}",
                            end.records, self.records
                        )));
                    }
                    let digest = self.hasher.finalize().to_hex();
                    if end.digest != digest.as_str() {
                        return Err(self.error(
                            "the end record's digest does not match the lines before it: \
                             the file was changed after it was written",
                        ));
                    }
                    self.ended = true;
                }
                record => {
                    self.hasher.update(&self.buffer);
                    self.records += 1;
                    return Ok(Some(record));
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for ExportReader<R> {
    type Item = StoreResult<ExportRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_record() {
            Ok(record) => record.map(Ok),
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

/// Reads the next line of `input` (line number `line`) into `buffer`, newline included:
/// `false` at the end of the input.
fn read_line(input: &mut impl BufRead, buffer: &mut Vec<u8>, line: u64) -> StoreResult<bool> {
    buffer.clear();
    let limit = u64::try_from(MAX_EXPORT_LINE).unwrap_or(u64::MAX);
    let read = input
        .by_ref()
        .take(limit + 1)
        .read_until(b'\n', buffer)
        .map_err(|e| StoreError::Io {
            message: format!("reading line {line} of the export: {e}"),
        })?;
    if buffer.len() > MAX_EXPORT_LINE {
        return Err(StoreError::Export {
            line,
            message: format!("the line is longer than {MAX_EXPORT_LINE} bytes"),
        });
    }
    Ok(read > 0)
}

/// An export to import, which can be read more than once (an import checks a file whole
/// before it writes, or reads it again when its transaction is retried).
pub trait ExportSource: Send + Sync {
    /// A reader of the export from its start.
    ///
    /// # Errors
    ///
    /// As [`ExportReader::new`], or [`StoreError::Io`] when the export cannot be opened.
    fn open(&self) -> StoreResult<ExportReader<Box<dyn BufRead + '_>>>;
}

/// An export in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    path: PathBuf,
}

impl ExportFile {
    /// The export in the file at `path`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ExportFile { path: path.into() }
    }

    /// Its path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ExportSource for ExportFile {
    fn open(&self) -> StoreResult<ExportReader<Box<dyn BufRead + '_>>> {
        let file = File::open(&self.path).map_err(|e| StoreError::Io {
            message: format!("opening {}: {e}", self.path.display()),
        })?;
        ExportReader::new(Box::new(BufReader::with_capacity(1 << 16, file)) as Box<dyn BufRead>)
    }
}

/// One export in a file of several, one after another (`facts mem export --all-scopes`):
/// its scope and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSection {
    /// The scope its header names.
    pub scope: String,
    /// The byte its header starts at.
    pub start: u64,
    /// Its length in bytes, end record included.
    pub len: u64,
}

impl ExportFile {
    /// The exports in the file, one after another: where each header starts, up to the
    /// next (each is read and checked in full when it is imported).
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when the file cannot be read; [`StoreError::Export`] when its
    /// first line is not a header, or a header cannot be read.
    pub fn sections(&self) -> StoreResult<Vec<ExportSection>> {
        let file = File::open(&self.path).map_err(|e| StoreError::Io {
            message: format!("opening {}: {e}", self.path.display()),
        })?;
        let mut input = BufReader::with_capacity(1 << 16, file);
        let mut buffer = Vec::new();
        let mut sections: Vec<ExportSection> = Vec::new();
        let (mut at, mut line) = (0u64, 0u64);
        loop {
            line += 1;
            if !read_line(&mut input, &mut buffer, line)? {
                break;
            }
            if buffer.starts_with(br#"{"type":"header""#) || line == 1 {
                let Ok(ExportRecord::Header(header)) =
                    serde_json::from_slice::<ExportRecord>(&buffer)
                else {
                    return Err(StoreError::Export {
                        line,
                        message: format!("not a {EXPORT_FORMAT} header"),
                    });
                };
                if let Some(last) = sections.last_mut() {
                    last.len = at - last.start;
                }
                sections.push(ExportSection {
                    scope: header.scope,
                    start: at,
                    len: 0,
                });
            }
            at += u64::try_from(buffer.len()).unwrap_or(u64::MAX);
        }
        if let Some(last) = sections.last_mut() {
            last.len = at - last.start;
        }
        Ok(sections)
    }

    /// The export `section` of this file, to import on its own.
    #[must_use]
    pub fn section(&self, section: &ExportSection) -> ExportFileSection {
        ExportFileSection {
            path: self.path.clone(),
            start: section.start,
            len: section.len,
        }
    }
}

/// One export of a file of several ([`ExportFile::section`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFileSection {
    path: PathBuf,
    start: u64,
    len: u64,
}

impl ExportSource for ExportFileSection {
    fn open(&self) -> StoreResult<ExportReader<Box<dyn BufRead + '_>>> {
        let io = |e: io::Error| StoreError::Io {
            message: format!("reading {}: {e}", self.path.display()),
        };
        let mut file = File::open(&self.path).map_err(io)?;
        file.seek(SeekFrom::Start(self.start)).map_err(io)?;
        let reader = BufReader::with_capacity(1 << 16, file.take(self.len));
        ExportReader::new(Box::new(reader) as Box<dyn BufRead>)
    }
}

/// An export held in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportText {
    bytes: Arc<[u8]>,
}

impl ExportText {
    /// The export in `bytes`.
    #[must_use]
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        ExportText {
            bytes: bytes.into(),
        }
    }
}

impl ExportSource for ExportText {
    fn open(&self) -> StoreResult<ExportReader<Box<dyn BufRead + '_>>> {
        ExportReader::new(Box::new(&self.bytes[..]) as Box<dyn BufRead>)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fact_model::ProfileField;

    use super::*;

    fn file(records: usize) -> Vec<u8> {
        let mut writer = ExportWriter::new(Vec::new(), &ExportHeader::new("s", None)).unwrap();
        for n in 0..records {
            let entry = ProfileEntry {
                field: ProfileField::Work,
                text: format!("text {n}"),
                at: Timestamp::from_unix_secs(i64::try_from(n).unwrap()).unwrap(),
            };
            writer.write_record(&ExportRecord::Profile(entry)).unwrap();
        }
        writer.finish().unwrap().0
    }

    fn read(bytes: &[u8]) -> StoreResult<Vec<ExportRecord>> {
        ExportReader::new(bytes)?.collect()
    }

    fn failure(bytes: &[u8]) -> (u64, String) {
        match read(bytes).unwrap_err() {
            StoreError::Export { line, message } => (line, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_written_file_reads_back_its_records() {
        let bytes = file(3);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(text.starts_with(r#"{"type":"header","format":"factmem-export","version":1"#));
        assert_eq!(read(&bytes).unwrap().len(), 3);
        assert_eq!(read(&file(0)).unwrap(), Vec::new());
    }

    #[test]
    fn a_file_cut_anywhere_is_refused_naming_a_line() {
        let bytes = file(3);
        // Only the last newline may go: every record is still there then.
        for cut in 0..bytes.len() - 1 {
            let prefix = bytes.get(..cut).unwrap();
            assert!(read(prefix).is_err(), "a file cut at byte {cut} was read");
        }
        let lines = bytes.split(|&b| b == b'\n').count();
        let cut_after_two: usize = bytes
            .split_inclusive(|&b| b == b'\n')
            .take(2)
            .map(<[u8]>::len)
            .sum();
        let (line, message) = failure(bytes.get(..cut_after_two).unwrap());
        assert_eq!(line, 2, "{message}");
        assert!(message.contains("cut short"), "{message}");
        assert!(lines > 2);
    }

    #[test]
    fn a_changed_byte_or_an_extra_line_is_refused() {
        let bytes = file(2);
        let text = String::from_utf8(bytes).unwrap();
        let changed = text.replacen("text 1", "text 9", 1);
        let (line, message) = failure(changed.as_bytes());
        assert_eq!(line, 4);
        assert!(message.contains("digest"), "{message}");
        let extra = format!("{text}{{}}\n");
        assert_eq!(failure(extra.as_bytes()).0, 5);
        let blank = text.replacen('\n', "\n\n", 1);
        assert_eq!(failure(blank.as_bytes()).0, 2);
        let garbage = text.replacen(r#"{"type":"profile""#, r#"{"type":"nonsense""#, 1);
        assert_eq!(failure(garbage.as_bytes()).0, 2);
    }

    #[test]
    fn a_foreign_file_or_a_newer_version_is_refused_at_its_header() {
        for foreign in [
            &b""[..],
            b"hello\n",
            b"[1, 2]\n",
            br#"{"version": 1, "records": []}"#,
            br#"{"type":"header","format":"other","version":1,"scope":"s"}"#,
        ] {
            let (line, message) = failure(foreign);
            assert_eq!(line, 1);
            assert!(
                message.starts_with("not a factmem-export file"),
                "{message}"
            );
        }
        let newer = br#"{"type":"header","format":"factmem-export","version":2,"scope":"s"}"#;
        assert!(matches!(
            read(newer),
            Err(StoreError::ExportVersion {
                found: 2,
                supported: 1
            })
        ));
    }

    #[test]
    fn a_file_of_several_exports_is_read_section_by_section() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("all.jsonl");
        let mut all = file(2);
        let mut second = ExportWriter::new(Vec::new(), &ExportHeader::new("t", None)).unwrap();
        let entry = ProfileEntry {
            field: ProfileField::Personal,
            text: "x".into(),
            at: Timestamp::UNIX_EPOCH,
        };
        second.write_record(&ExportRecord::Profile(entry)).unwrap();
        all.extend(second.finish().unwrap().0);
        std::fs::write(&path, &all).unwrap();
        let (line, message) = failure(&all);
        assert_eq!(line, 5);
        assert!(message.contains("--all-scopes"), "{message}");
        let file = ExportFile::new(&path);
        let sections = file.sections().unwrap();
        let scopes: Vec<&str> = sections.iter().map(|s| s.scope.as_str()).collect();
        assert_eq!(scopes, ["s", "t"]);
        let counts: Vec<usize> = sections
            .iter()
            .map(|s| {
                let section = file.section(s);
                let reader = section.open().unwrap();
                reader.collect::<StoreResult<Vec<_>>>().unwrap().len()
            })
            .collect();
        assert_eq!(counts, [2, 1]);
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(file.sections().is_err());
    }

    #[test]
    fn header_and_end_records_are_written_by_the_writer_alone() {
        let mut writer = ExportWriter::new(Vec::new(), &ExportHeader::new("s", None)).unwrap();
        let header = ExportRecord::Header(ExportHeader::new("s", None));
        assert!(writer.write_record(&header).is_err());
        assert_eq!(read(&writer.finish().unwrap().0).unwrap(), Vec::new());
    }
}
