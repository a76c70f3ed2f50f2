//! UCI Heart Disease as its four hospitals (FLamby's Fed-Heart-Disease split), from
//! data/raw/heart: one agent per site in the order Cleveland, Hungary, Switzerland, VA Long
//! Beach. Label: diagnosis `num` > 0. The sites differ in size, prevalence and missingness.
//!
//! Features (docs/heart.md has the rule and why), fitted on the site's training rows only:
//! - `?` is missing, and so are a resting blood pressure or a cholesterol of 0 (impossible
//!   values Switzerland and VA write for "not measured");
//! - continuous columns (age, trestbps, chol, thalach, oldpeak): a missing value takes the
//!   median of the site's observed training values (0 if it has none), and each gets a 0/1
//!   "was missing" column;
//! - binary columns (sex, fbs, exang): a missing value takes the training rows' majority;
//! - categorical columns (cp, restecg, slope, ca, thal): one-hot over their documented levels,
//!   a missing value being all zeros;
//! - then every column is standardised by the training rows' mean and s.d.; a column constant
//!   over the training rows becomes 0 (it carries nothing the intercept does not).

use super::{as_text, read_checked};
use crate::error::{FboError, Result};
use ndarray::Array2;
use std::path::Path;

/// (file, sha256 of the original, uncompressed data) per site, in agent order.
pub const SITES: [(&str, &str); 4] = [
    (
        "processed.cleveland.data",
        "a74b7efa387bc9d108d7d0115d831fe9b414b29ae7124f331b622b4efa0427c8",
    ),
    (
        "processed.hungarian.data",
        "59f4b00b123247da5baf0370f92b3b7aba7e7b63d7278c98145c27106f6c97dd",
    ),
    (
        "processed.switzerland.data",
        "834a405ccf5b66ab4056bb77794adc8df0b7125186454c0a1d002d33c6c3b314",
    ),
    (
        "processed.va.data",
        "e7c93d8d0d2acdadfa4c5e8de768e2191e7f618b952e29623f1f0d5949ff6b8f",
    ),
];

pub const SITE_NAMES: [&str; 4] = ["Cleveland", "Hungary", "Switzerland", "VA Long Beach"];

/// Columns of the raw rows.
const AGE: usize = 0;
const TRESTBPS: usize = 3;
const CHOL: usize = 4;
const THALACH: usize = 7;
const OLDPEAK: usize = 9;
const CONTINUOUS: [usize; 5] = [AGE, TRESTBPS, CHOL, THALACH, OLDPEAK];
/// sex, fbs, exang.
const BINARY: [usize; 3] = [1, 5, 8];
/// (column, levels): cp, restecg, slope, ca, thal.
const CATEGORICAL: [(usize, &[f64]); 5] = [
    (2, &[1.0, 2.0, 3.0, 4.0]),
    (6, &[0.0, 1.0, 2.0]),
    (10, &[1.0, 2.0, 3.0]),
    (11, &[0.0, 1.0, 2.0, 3.0]),
    (12, &[3.0, 6.0, 7.0]),
];
/// Features after encoding: 5 continuous + 5 missingness + 3 binary + 17 one-hot.
pub const FEATURES: usize = 30;

/// One hospital's patients: the 13 raw features (NaN = missing) and the diagnosis.
pub struct Site {
    pub name: &'static str,
    pub raw: Vec<[f64; 13]>,
    pub labels: Vec<usize>,
    /// False where this machine does not hold the site's file: a hospital running its own
    /// agent (Flower, `fbo ask`/`tell`) has its own patients only.
    pub present: bool,
}

/// Reads the four sites (each `PATH` or `PATH.gz`, checked against its sha256); a site whose
/// file is absent is kept as not present: a hospital's machine holds its own file only, and a
/// federation's server none (its agents evaluate at their sites). Evaluating an absent site
/// is refused then (`objective::model`). Returns them and the sha256 of the first present
/// site's data (empty if none is).
pub fn read(dir: &Path) -> Result<(Vec<Site>, String)> {
    let mut sites = Vec::new();
    let mut first_sha = String::new();
    for (k, (file, sha)) in SITES.iter().enumerate() {
        let path = dir.join(file);
        let gz = dir.join(format!("{file}.gz"));
        if !path.exists() && !gz.exists() {
            sites.push(Site {
                name: SITE_NAMES[k],
                raw: Vec::new(),
                labels: Vec::new(),
                present: false,
            });
            continue;
        }
        let (bytes, digest) = read_checked(&path, Some(sha), "heart disease site file")?;
        if first_sha.is_empty() {
            first_sha = digest;
        }
        let text = as_text(&path, &bytes)?;
        let mut raw = Vec::new();
        let mut labels = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let err = |msg: String| FboError::spec(&path, format!("line {}", i + 1), msg);
            if f.len() != 14 {
                return Err(err(format!("has {} fields, expected 14", f.len())));
            }
            let mut row = [f64::NAN; 13];
            for (c, v) in f[..13].iter().enumerate() {
                if *v == "?" {
                    continue;
                }
                row[c] = v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| err(format!("column {}: {v:?} is not a number", c + 1)))?;
            }
            for c in [TRESTBPS, CHOL] {
                if row[c] == 0.0 {
                    row[c] = f64::NAN;
                }
            }
            let num: f64 = f[13]
                .parse()
                .map_err(|_| err(format!("diagnosis {:?} is not a number", f[13])))?;
            labels.push(usize::from(num > 0.0));
            raw.push(row);
        }
        sites.push(Site {
            name: SITE_NAMES[k],
            raw,
            labels,
            present: true,
        });
    }
    Ok((sites, first_sha))
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A site's encoded training and validation rows (the rule of the module's comment, fitted on
/// the training rows `tr` only).
pub struct Encoded {
    pub x_train: Array2<f64>,
    pub y_train: Vec<usize>,
    pub x_valid: Array2<f64>,
    pub y_valid: Vec<usize>,
}

pub fn encode(site: &Site, tr: &[usize], va: &[usize]) -> Encoded {
    let fill: Vec<f64> = CONTINUOUS
        .iter()
        .map(|&c| {
            median(
                tr.iter()
                    .map(|&i| site.raw[i][c])
                    .filter(|v| !v.is_nan())
                    .collect(),
            )
        })
        .collect();
    let majority: Vec<f64> = BINARY
        .iter()
        .map(|&c| {
            let (ones, seen) = tr.iter().fold((0, 0), |(o, s), &i| {
                let v = site.raw[i][c];
                if v.is_nan() {
                    (o, s)
                } else {
                    (o + usize::from(v != 0.0), s + 1)
                }
            });
            if 2 * ones > seen { 1.0 } else { 0.0 }
        })
        .collect();
    let row = |i: usize| -> Vec<f64> {
        let r = &site.raw[i];
        let mut out = Vec::with_capacity(FEATURES);
        for (k, &c) in CONTINUOUS.iter().enumerate() {
            out.push(if r[c].is_nan() { fill[k] } else { r[c] });
        }
        for &c in &CONTINUOUS {
            out.push(f64::from(u8::from(r[c].is_nan())));
        }
        for (k, &c) in BINARY.iter().enumerate() {
            out.push(if r[c].is_nan() {
                majority[k]
            } else {
                f64::from(u8::from(r[c] != 0.0))
            });
        }
        for (c, levels) in CATEGORICAL {
            for &l in levels {
                out.push(f64::from(u8::from(r[c] == l)));
            }
        }
        out
    };
    let matrix = |rows: &[usize]| {
        let mut m = Array2::zeros((rows.len(), FEATURES));
        for (k, &i) in rows.iter().enumerate() {
            for (j, v) in row(i).into_iter().enumerate() {
                m[[k, j]] = v;
            }
        }
        m
    };
    let (mut x_train, mut x_valid) = (matrix(tr), matrix(va));
    let n = tr.len().max(1) as f64;
    for j in 0..FEATURES {
        let mean = x_train.column(j).sum() / n;
        let var = x_train
            .column(j)
            .iter()
            .map(|v| (v - mean) * (v - mean))
            .sum::<f64>()
            / n;
        let sd = var.sqrt();
        for m in [&mut x_train, &mut x_valid] {
            m.column_mut(j)
                .mapv_inplace(|v| if sd > 1e-12 { (v - mean) / sd } else { 0.0 });
        }
    }
    Encoded {
        x_train,
        y_train: tr.iter().map(|&i| site.labels[i]).collect(),
        x_valid,
        y_valid: va.iter().map(|&i| site.labels[i]).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(rows: &[[f64; 13]], labels: &[usize]) -> Site {
        Site {
            name: "toy",
            raw: rows.to_vec(),
            labels: labels.to_vec(),
            present: true,
        }
    }

    #[test]
    fn missing_values_are_filled_from_the_training_rows_only() {
        let n = f64::NAN;
        let base = [
            50.0, 1.0, 4.0, 120.0, 200.0, 0.0, 0.0, 150.0, 0.0, 1.0, 2.0, 0.0, 3.0,
        ];
        let mut rows = vec![base; 4];
        rows[0][CHOL] = 180.0;
        rows[1][CHOL] = 240.0;
        rows[2][CHOL] = n; // training, missing
        rows[3][CHOL] = 1000.0; // validation: must not move the median
        rows[2][2] = n; // cp missing: all zeros before standardising
        let s = site(&rows, &[0, 1, 0, 1]);
        let e = encode(&s, &[0, 1, 2], &[3]);
        // chol in training: 180, 240, median(180, 240) = 210: mean 210, sd sqrt(600).
        let sd = (((180.0f64 - 210.0).powi(2) + (240.0f64 - 210.0).powi(2)) / 3.0).sqrt();
        assert!((e.x_train[[2, 2]] - 0.0).abs() < 1e-12);
        assert!((e.x_train[[0, 2]] - (180.0 - 210.0) / sd).abs() < 1e-12);
        assert!((e.x_valid[[0, 2]] - (1000.0 - 210.0) / sd).abs() < 1e-12);
        // chol's missingness column (index 5 + 2) is 1 for row 2 only.
        assert!(e.x_train[[2, 7]] > 0.0 && e.x_train[[0, 7]] < 0.0);
        // Constant columns (age) become 0.
        assert_eq!(e.x_train[[0, 0]], 0.0);
        assert_eq!(e.y_valid, vec![1]);
    }
}
