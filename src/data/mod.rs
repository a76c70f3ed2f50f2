//! Raw datasets: readers that check what they read (shape, label set, checksum) and say which
//! file and line is wrong, and the seeded train/validation splits.

pub mod emnist;
pub mod har;
pub mod heart;
pub mod landmine;
pub mod privtuna;

use crate::error::{FboError, Result};
use crate::math::rng::{Purpose, stream};
use flate2::read::GzDecoder;
use rand::seq::SliceRandom;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// Hex sha256 of a file's bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::math::hex::bytes(&Sha256::digest(bytes))
}

/// Reads a file whole and checks its sha256 when one is known. The file may be stored
/// gzip-compressed (`PATH` ending in `.gz`, or `PATH.gz` beside a missing `PATH`, as the raw
/// data committed in `data/raw/` are): it is then decompressed and the sha256 is that of the
/// decompressed bytes, so one checksum names the data however they are stored.
pub fn read_checked(
    path: &Path,
    expected_sha256: Option<&str>,
    what: &str,
) -> Result<(Vec<u8>, String)> {
    let gz_beside = {
        let mut p = path.as_os_str().to_owned();
        p.push(".gz");
        std::path::PathBuf::from(p)
    };
    let (path, gz) = if !path.exists() && gz_beside.exists() {
        (gz_beside.as_path(), true)
    } else {
        (path, path.extension().is_some_and(|e| e == "gz"))
    };
    let raw = std::fs::read(path)
        .map_err(|e| FboError::spec(path, "", format!("cannot read the {what}: {e}")))?;
    let bytes = if gz { gunzip(path, &raw, what)? } else { raw };
    let sha = sha256_hex(&bytes);
    if let Some(want) = expected_sha256
        && sha != want
    {
        return Err(FboError::spec(
            path,
            "",
            format!(
                "this is not the expected {what}: sha256 {sha}, expected {want} (a truncated or different file; see data/raw/*/README.md)"
            ),
        ));
    }
    Ok((bytes, sha))
}

fn gunzip(path: &Path, gz: &[u8], what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    GzDecoder::new(gz)
        .read_to_end(&mut out)
        .map_err(|e| FboError::spec(path, "", format!("cannot decompress the {what}: {e}")))?;
    Ok(out)
}

/// A gzip-compressed file whose sha256 is known for the compressed bytes (as the HAR and
/// EMNIST files are published), decompressed: (bytes, sha256 of the .gz file).
pub fn read_gz_checked(
    path: &Path,
    expected_sha256: &str,
    what: &str,
) -> Result<(Vec<u8>, String)> {
    let gz = std::fs::read(path)
        .map_err(|e| FboError::spec(path, "", format!("cannot read the {what}: {e}")))?;
    let sha = sha256_hex(&gz);
    if sha != expected_sha256 {
        return Err(FboError::spec(
            path,
            "",
            format!(
                "this is not the expected {what}: sha256 {sha}, expected {expected_sha256} (a truncated or different file; see data/raw/*/README.md)"
            ),
        ));
    }
    Ok((gunzip(path, &gz, what)?, sha))
}

/// Bytes as text, or an error naming the file.
pub fn as_text<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| FboError::spec(path, "", "not UTF-8 text"))
}

/// A CSV text's header fields and its remaining lines. A spreadsheet saves a byte-order mark
/// before the header (and CRLF line ends, which lines() takes off), and pads fields with
/// spaces: none of it is part of the table.
pub fn csv_header(text: &str) -> (Vec<&str>, std::str::Lines<'_>) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .collect();
    (header, lines)
}

/// Stratified split: within each class, a seeded shuffle puts floor(n_c / 2) rows in training
/// and the rest in validation. Returns true for training rows. (scikit-learn's shuffle, which
/// the authors used, cannot be reproduced outside Python; this split is recorded instead.)
pub fn stratified_half_split(labels: &[usize], seed: u64, agent: usize) -> Vec<bool> {
    let mut rng = stream(seed, 0, agent as u64, Purpose::AgentData);
    let mut train = vec![false; labels.len()];
    let classes = labels.iter().copied().max().map_or(0, |m| m + 1);
    for c in 0..classes {
        let mut rows: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == c).collect();
        rows.shuffle(&mut rng);
        for &r in &rows[..rows.len() / 2] {
            train[r] = true;
        }
    }
    train
}

/// The training rows, the validation rows and the training mask of `stratified_half_split`.
pub fn half_split_rows(
    labels: &[usize],
    seed: u64,
    agent: usize,
) -> (Vec<usize>, Vec<usize>, Vec<bool>) {
    let train = stratified_half_split(labels, seed, agent);
    let (tr, va): (Vec<usize>, Vec<usize>) = (0..labels.len()).partition(|&i| train[i]);
    (tr, va, train)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_stratified_and_seeded() {
        let labels: Vec<usize> = (0..101).map(|i| (i % 10 == 0) as usize).collect();
        let s = stratified_half_split(&labels, 3, 1);
        let pos_train = (0..101).filter(|&i| labels[i] == 1 && s[i]).count();
        let neg_train = (0..101).filter(|&i| labels[i] == 0 && s[i]).count();
        assert_eq!((pos_train, neg_train), (5, 45));
        assert_eq!(s, stratified_half_split(&labels, 3, 1));
        assert_ne!(s, stratified_half_split(&labels, 4, 1));
    }

    #[test]
    fn sha256_of_a_known_string() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
