//! The result directory a benchmark's runs are saved in ([`ResultDir`]):
//! records, summary.json and table.txt. What one run produced
//! ([`RunResult`]) and where ([`Environment`]) are in
//! [`crate::run_result`], re-exported here.
//!
//! # Result directory layout
//!
//! ```text
//! results/<UTC timestamp, e.g. 20250131T142501Z>[-N]/
//!     summary.json                 every run saved so far: {"format": "detpath-bench/1", "runs": [RunResult...]}
//!     <datapath>-<config>.csv      raw per-round records of one run (see crate::records)
//!     table.txt                    the human tables of every run saved so far
//! ```
//!
//! `<config>` is `default`, `default-stress`, `tuned` or `tuned-stress`
//! (a `-2`, `-3`... suffix when the same name is saved twice). A new
//! directory never reuses an existing one (a `-2`, `-3`... suffix is added),
//! and every file is written to a temporary name, synced and renamed, so a
//! run killed at any point leaves the runs saved before it intact and
//! readable.

use crate::records::{self, Record};
use std::io;
use std::path::{Path, PathBuf};

pub use crate::run_result::{configuration_label, now_unix, utc_compact, utc_iso8601, Environment, RunConfig, RunResult, SummaryFile, FORMAT};

/// Why a result directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// summary.json is not the JSON of a [`SummaryFile`].
    #[error("{path}: not a detpath result summary: {source}")]
    Json {
        /// The summary.json.
        path: PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// summary.json has another `format` tag than [`FORMAT`].
    #[error("{path}: format {found:?}, this detpath reads {FORMAT:?}")]
    Format {
        /// The summary.json.
        path: PathBuf,
        /// The tag it has.
        found: String,
    },
    /// A run's records file does not parse.
    #[error("{path}: {source}")]
    Records {
        /// The records file.
        path: PathBuf,
        /// What is wrong with it.
        source: records::ReadError,
    },
}

/// A result directory being filled by a benchmark.
#[derive(Debug)]
pub struct ResultDir {
    path: PathBuf,
    runs: Vec<RunResult>,
}

impl ResultDir {
    /// Creates `base/<UTC timestamp>` (creating `base` if needed), or
    /// `base/<timestamp>-2`, `-3`, ... if that exists: never an existing one.
    pub fn create(base: &Path) -> io::Result<ResultDir> {
        ResultDir::create_named(base, &utc_compact(now_unix()))
    }

    /// As [`ResultDir::create`] with a chosen name instead of the timestamp.
    pub fn create_named(base: &Path, name: &str) -> io::Result<ResultDir> {
        std::fs::create_dir_all(base)?;
        for i in 1u32.. {
            let p = if i == 1 { base.join(name) } else { base.join(format!("{name}-{i}")) };
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(ResultDir { path: p, runs: Vec::new() }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!()
    }

    /// The directory (`base/<timestamp>`) where summary.json and the records go.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The runs saved so far.
    pub fn runs(&self) -> &[RunResult] {
        &self.runs
    }

    /// Saves one run: its raw records as `<datapath>-<config>.csv`, then
    /// summary.json and table.txt rewritten with every run so far. Each file
    /// is written atomically. Returns the saved copy (with `name` and
    /// `records_file` set). Records may be empty (e.g. sockperf): then no
    /// CSV is written.
    pub fn save_run(&mut self, run: &RunResult, records: &[Record]) -> io::Result<&RunResult> {
        let mut run = run.clone();
        let stem = slug(&format!("{}-{}", run.config.datapath, run.config.configuration_slug()));
        let mut name = stem.clone();
        for i in 2u32.. {
            let taken = self.runs.iter().any(|r| r.name == name) || self.path.join(format!("{name}.csv")).exists();
            if !taken {
                break;
            }
            name = format!("{stem}-{i}");
        }
        if !records.is_empty() {
            let file = format!("{name}.csv");
            detpath::sys::fsutil::write_atomic_with(&self.path.join(&file), 0o644, |w| {
                let mut rw = records::RecordWriter::new(w)?;
                rw.write_all(records)?;
                rw.finish().map(|_| ())
            })?;
            run.records_file = Some(file);
        }
        run.name = name;
        self.runs.push(run);
        self.write_summary()?;
        Ok(self.runs.last().expect("just pushed"))
    }

    fn write_summary(&self) -> io::Result<()> {
        let s = SummaryFile { format: FORMAT.into(), runs: self.runs.clone() };
        let mut json = serde_json::to_vec_pretty(&s)?;
        json.push(b'\n');
        detpath::sys::fsutil::write_atomic(&self.path.join("summary.json"), &json)?;
        let table = crate::table::render(&self.runs);
        detpath::sys::fsutil::write_atomic(&self.path.join("table.txt"), table.as_bytes())
    }

    /// Reads the runs of a result directory (its summary.json).
    pub fn load(dir: &Path) -> Result<Vec<RunResult>, LoadError> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Io { path: path.clone(), source })?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|source| LoadError::Json { path: path.clone(), source })?;
        let found = v.get("format").and_then(|f| f.as_str()).unwrap_or("").to_string();
        if found != FORMAT {
            return Err(LoadError::Format { path, found });
        }
        let s: SummaryFile = serde_json::from_value(v).map_err(|source| LoadError::Json { path, source })?;
        Ok(s.runs)
    }

    /// Reads the raw records of one run of a result directory (empty if the
    /// run has none).
    pub fn load_records(dir: &Path, run: &RunResult) -> Result<Vec<Record>, LoadError> {
        let Some(f) = &run.records_file else {
            return Ok(Vec::new());
        };
        let path = dir.join(f);
        records::read_csv_file(&path).map_err(|source| LoadError::Records { path, source })
    }
}

/// Lower-case letters, digits, `-`, `_` and `.`; anything else becomes `_`.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c.to_ascii_lowercase() } else { '_' }).collect()
}
