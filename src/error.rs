//! One error type for the whole crate. Each variant maps to a documented exit status so
//! scripts can tell "your spec is wrong" (2) from "the run failed" (1).

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum FboError {
    /// The user's input is invalid: a spec key, a CLI value. Nothing was run.
    Spec {
        file: PathBuf,
        key: String,
        message: String,
    },
    /// Reading or writing a file failed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A numerical or runtime failure while an experiment was running.
    Run(String),
    /// Stopped on request (an interrupt in a host such as Python, where fbo cannot exit the
    /// process): finished units are saved, the rest were abandoned.
    Interrupted,
}

pub type Result<T> = std::result::Result<T, FboError>;

impl FboError {
    pub fn spec(
        file: impl Into<PathBuf>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        FboError::Spec {
            file: file.into(),
            key: key.into(),
            message: message.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FboError::Io {
            path: path.into(),
            source,
        }
    }

    /// Exit status: 2 for invalid input (nothing ran), 1 for failures during a run.
    pub fn exit_code(&self) -> i32 {
        match self {
            FboError::Spec { .. } => 2,
            FboError::Io { .. } | FboError::Run(_) => 1,
            FboError::Interrupted => 130,
        }
    }
}

impl fmt::Display for FboError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FboError::Spec { file, key, message } if key.is_empty() => {
                write!(f, "{}: {}", file.display(), message)
            }
            FboError::Spec { file, key, message } => {
                write!(f, "{}: key `{}`: {}", file.display(), key, message)
            }
            FboError::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            FboError::Run(msg) => write!(f, "{msg}"),
            FboError::Interrupted => write!(
                f,
                "interrupted: what was finished is saved; rerun the same command to resume"
            ),
        }
    }
}

impl std::error::Error for FboError {}
