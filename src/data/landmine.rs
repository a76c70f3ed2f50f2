//! The landmine detection data (29 fields, 9 features, binary labels) from the CSV
//! transcription in data/raw/landmine/landmine.csv.gz (read compressed or not).

use super::{as_text, read_checked};
use crate::error::{FboError, Result};
use ndarray::Array2;
use std::path::Path;

pub const CSV_SHA256: &str = "394720fa1ee0afcb89abda981caeadc992e4c6eaa7002f3ec7c901517a3c63fc";
pub const FIELDS: usize = 29;
pub const FEATURES: usize = 9;
const HEADER: &str = "field,index_in_field,label,f1,f2,f3,f4,f5,f6,f7,f8,f9";

/// One field's samples.
pub struct Field {
    pub x: Array2<f64>,
    pub labels: Vec<usize>,
}

/// Reads and checks the CSV; returns the fields in order and the file's sha256.
pub fn read(path: &Path) -> Result<(Vec<Field>, String)> {
    let (bytes, sha) = read_checked(path, Some(CSV_SHA256), "landmine CSV")?;
    let text = as_text(path, &bytes)?;
    let err = |line: usize, msg: String| FboError::spec(path, format!("line {line}"), msg);
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(err(1, format!("header must be `{HEADER}`")));
    }
    let mut rows: Vec<Vec<Vec<f64>>> = vec![Vec::new(); FIELDS];
    let mut labels: Vec<Vec<usize>> = vec![Vec::new(); FIELDS];
    for (k, line) in lines.enumerate() {
        let ln = k + 2;
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 3 + FEATURES {
            return Err(err(
                ln,
                format!("has {} fields, expected {}", f.len(), 3 + FEATURES),
            ));
        }
        let field: usize = f[0]
            .parse()
            .map_err(|_| err(ln, format!("field {:?} is not an integer", f[0])))?;
        if !(1..=FIELDS).contains(&field) {
            return Err(err(ln, format!("field {field} outside 1..={FIELDS}")));
        }
        let idx: usize = f[1]
            .parse()
            .map_err(|_| err(ln, "index_in_field is not an integer".into()))?;
        if idx != rows[field - 1].len() {
            return Err(err(
                ln,
                format!(
                    "index_in_field {idx} out of order (expected {})",
                    rows[field - 1].len()
                ),
            ));
        }
        let label = match f[2] {
            "0" => 0,
            "1" => 1,
            other => return Err(err(ln, format!("label {other:?} is not 0 or 1"))),
        };
        let mut feats = Vec::with_capacity(FEATURES);
        for v in &f[3..] {
            let x: f64 = v
                .parse()
                .map_err(|_| err(ln, format!("feature {v:?} is not a number")))?;
            if !x.is_finite() {
                return Err(err(ln, format!("feature {v:?} is not finite")));
            }
            feats.push(x);
        }
        rows[field - 1].push(feats);
        labels[field - 1].push(label);
    }
    let mut fields = Vec::with_capacity(FIELDS);
    for (m, (r, l)) in rows.into_iter().zip(labels).enumerate() {
        if r.is_empty() || !l.contains(&0) || !l.contains(&1) {
            return Err(FboError::spec(
                path,
                "",
                format!("field {} has no samples of one class", m + 1),
            ));
        }
        let n = r.len();
        let x = Array2::from_shape_vec((n, FEATURES), r.into_iter().flatten().collect())
            .expect("rows have FEATURES columns");
        fields.push(Field { x, labels: l });
    }
    Ok((fields, sha))
}
