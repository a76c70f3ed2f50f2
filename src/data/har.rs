//! UCI HAR (smartphone activity recognition) from data/raw/har: the 21 subjects whose
//! features are available (the original train part; see that folder's README), 561 features,
//! 6 classes. One agent per subject, in ascending subject order.

use super::{as_text, read_gz_checked};
use crate::error::{FboError, Result};
use ndarray::Array2;
use std::path::Path;

pub const FEATURES: usize = 561;
pub const CLASSES: usize = 6;
/// sha256 of the .gz files as published (data/raw/har/README.md).
const X_SHA256: &str = "a87924b9b76b9db54fe619fcce38d5cd51bef6fca800255fb4ba71c0b3ad2011";
const Y_SHA256: &str = "aaf87bd71bdf73ac95133f15ee61ea7779cd6d9bf4c46cf93a06f796df43404b";
const S_SHA256: &str = "d42f7bfbc3ea3029f1c19b6071246051efb0ad42374aa12848134edea4c248c6";

/// One subject's rows.
pub struct Subject {
    pub id: usize,
    pub x: Array2<f64>,
    /// Class 0..6 (activity id - 1).
    pub labels: Vec<usize>,
}

/// Reads X_train, y_train and subject_train from the HAR folder; returns the subjects and the
/// features file's sha256.
pub fn read(dir: &Path) -> Result<(Vec<Subject>, String)> {
    let text_of = |file: &str, sha: &str, what: &str| -> Result<(String, String)> {
        let path = dir.join(file);
        let (bytes, digest) = read_gz_checked(&path, sha, what)?;
        Ok((as_text(&path, &bytes)?.to_string(), digest))
    };
    let xp = dir.join("X_train.txt.gz");
    let (xt, x_sha) = text_of(
        "X_train.txt.gz",
        X_SHA256,
        "HAR feature file X_train.txt.gz",
    )?;
    let (yt, _) = text_of("y_train.txt.gz", Y_SHA256, "HAR label file y_train.txt.gz")?;
    let (st, _) = text_of(
        "subject_train.txt.gz",
        S_SHA256,
        "HAR subject file subject_train.txt.gz",
    )?;
    let parse_ids = |text: &str, file: &str, lo: usize, hi: usize| -> Result<Vec<usize>> {
        text.lines()
            .enumerate()
            .map(|(i, l)| match l.trim().parse::<usize>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(v),
                _ => Err(FboError::spec(
                    dir.join(file),
                    format!("line {}", i + 1),
                    format!("{l:?} is not an integer in [{lo}, {hi}]"),
                )),
            })
            .collect()
    };
    let y = parse_ids(&yt, "y_train.txt.gz", 1, CLASSES)?;
    let s = parse_ids(&st, "subject_train.txt.gz", 1, 30)?;
    let mut rows: Vec<Vec<f64>> = Vec::with_capacity(y.len());
    for (i, line) in xt.lines().enumerate() {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|t| t.parse::<f64>().ok().filter(|x| x.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                FboError::spec(
                    &xp,
                    format!("line {}", i + 1),
                    "a feature is not a finite number",
                )
            })?;
        if v.len() != FEATURES {
            return Err(FboError::spec(
                &xp,
                format!("line {}", i + 1),
                format!("has {} features, expected {FEATURES}", v.len()),
            ));
        }
        rows.push(v);
    }
    if rows.len() != y.len() || rows.len() != s.len() {
        return Err(FboError::spec(
            dir,
            "",
            format!(
                "{} feature rows, {} labels, {} subject ids: they must match",
                rows.len(),
                y.len(),
                s.len()
            ),
        ));
    }
    let mut ids: Vec<usize> = s.clone();
    ids.sort_unstable();
    ids.dedup();
    let subjects = ids
        .into_iter()
        .map(|id| {
            let idx: Vec<usize> = (0..s.len()).filter(|&i| s[i] == id).collect();
            let x = Array2::from_shape_fn((idx.len(), FEATURES), |(r, c)| rows[idx[r]][c]);
            Subject {
                id,
                x,
                labels: idx.iter().map(|&i| y[i] - 1).collect(),
            }
        })
        .collect();
    Ok((subjects, x_sha))
}
