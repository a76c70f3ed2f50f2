//! PrivTuna's per-client hyperparameter grids (Sav et al., arXiv 2402.16087; data in
//! `data/raw/privtuna/`): finding the federations of a folder of that layout, reading each
//! client's grid and each federation's FedAvg grid, and telling apart the files that are not
//! a client's grid. The layout (`data/raw/privtuna/README.md`):
//!
//! `<skew>/<DATASET>_non-IID_<skew>/<N>_parties/individual/<level>/<level>_<skew>_<n>clts_clt<i>.txt`
//!
//! One federation is one `individual/<level>` folder's client files of one (level, skew, n);
//! N comes from the nearest `<N>_parties` folder above, and a file of another n inside it (a
//! 20-client federation's file in a 10-party folder) is skipped. Nothing here assumes a grid
//! size or the grid's values: the quantity-skew federations have 3 batch sizes, not 2.

use super::{as_text, read_checked};
use crate::error::{FboError, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The columns a client's grid must have (it has more: start, end, recall, ...).
pub const GRID_COLUMNS: [&str; 6] = [
    "duration",
    "val_loss",
    "val_accuracy",
    "batch_size",
    "client_lr",
    "client_momentum",
];

/// One grid point a client trained and validated.
#[derive(Clone, Debug, PartialEq)]
pub struct GridRow {
    /// 1-based line in its file.
    pub line: usize,
    pub batch_size: f64,
    pub client_lr: f64,
    pub client_momentum: f64,
    pub val_accuracy: f64,
    pub val_loss: f64,
    /// Training seconds of the point (the `duration` column).
    pub duration: f64,
}
// val_accuracy, val_loss and duration may be NaN or infinite (a diverged run); the
// hyperparameters are finite.

impl GridRow {
    /// The hyperparameters, the key that identifies the point across clients.
    pub fn key(&self) -> [f64; 3] {
        [self.client_lr, self.client_momentum, self.batch_size]
    }
}

#[derive(Clone, Debug)]
pub struct ClientGrid {
    pub client: usize,
    pub file: PathBuf,
    pub rows: Vec<GridRow>,
    /// sha256 of the decompressed file.
    pub sha256: String,
}

/// A file under the source folder that is not imported, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub file: PathBuf,
    pub reason: String,
}

/// One FedAvg grid point: the federation's test accuracy with one shared configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct FedAvgRow {
    pub test_accuracy: f64,
    /// Every numeric hyperparameter of the row, by name (client_lr, server_lr, ...).
    pub params: BTreeMap<String, f64>,
}

#[derive(Clone, Debug)]
pub struct FedAvgGrid {
    pub file: PathBuf,
    pub rows: Vec<FedAvgRow>,
}

#[derive(Clone, Debug)]
pub struct Federation {
    /// `<dataset>-<skew>-<level>-<N>`, lower case: the table's folder name.
    pub name: String,
    pub dataset: String,
    pub skew: String,
    pub level: String,
    /// N, the clients the federation has (from `<N>_parties`, else the file names).
    pub parties: usize,
    /// The `individual/<level>` folder.
    pub folder: PathBuf,
    /// Client grids in client order.
    pub clients: Vec<ClientGrid>,
    /// Clients 0..N with no grid file.
    pub missing: Vec<usize>,
    pub fedavg: Vec<FedAvgGrid>,
}

/// What a folder holds: its federations and every file not imported.
#[derive(Debug)]
pub struct Found {
    pub federations: Vec<Federation>,
    pub skipped: Vec<Skipped>,
}

/// (level, skew, n, client) of a client file name `<level>_<skew>_<n>clts_clt<i>.txt[.gz]`.
pub fn client_name(name: &str) -> Option<(String, String, usize, usize)> {
    let stem = name
        .strip_suffix(".txt.gz")
        .or_else(|| name.strip_suffix(".txt"))?;
    let parts: Vec<&str> = stem.split('_').collect();
    let [level, skew, n, clt] = parts[..] else {
        return None;
    };
    level.parse::<f64>().ok()?;
    if skew.is_empty() || !skew.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let n: usize = n.strip_suffix("clts")?.parse().ok()?;
    let i: usize = clt.strip_prefix("clt")?.parse().ok()?;
    Some((level.to_string(), skew.to_string(), n, i))
}

/// N of a `<N>_parties` folder name.
fn parties_of(name: &str) -> Option<usize> {
    name.strip_suffix("_parties")?.parse().ok()
}

/// The dataset of a `<DATASET>_non-IID_<skew>` folder name.
fn dataset_of(name: &str) -> Option<String> {
    let (d, _) = name.split_once("_non-IID")?;
    (!d.is_empty()).then(|| d.to_lowercase())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every file under `dir` (sorted, recursively), and `dir` itself if it is a file.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.is_file() {
            out.push(d);
            continue;
        }
        let rd = std::fs::read_dir(&d).map_err(|e| FboError::io(&d, e))?;
        for entry in rd {
            let entry = entry.map_err(|e| FboError::io(&d, e))?;
            stack.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Reads a file (PATH or PATH.gz) as text.
fn text_of(path: &Path, what: &str) -> Result<(String, String)> {
    let (bytes, sha) = read_checked(path, None, what)?;
    Ok((as_text(path, &bytes)?.to_string(), sha))
}

/// Where each of GRID_COLUMNS is in a client grid's header.
fn grid_columns(path: &Path, header: &[&str]) -> Result<[usize; 6]> {
    let mut idx = [0usize; 6];
    for (k, name) in GRID_COLUMNS.iter().enumerate() {
        idx[k] = header.iter().position(|h| h == name).ok_or_else(|| {
            FboError::spec(
                path,
                "line 1",
                format!(
                    "the header has no column {name}; a client grid has the columns {}",
                    GRID_COLUMNS.join(", ")
                ),
            )
        })?;
    }
    Ok(idx)
}

/// One grid row's values in their ranges (a measurement may be NaN: a diverged run).
fn check_row(row: &GridRow) -> std::result::Result<(), String> {
    if row.val_accuracy.is_finite() && !(0.0..=1.0).contains(&row.val_accuracy) {
        return Err(format!(
            "column val_accuracy: {} is not in [0, 1]",
            row.val_accuracy
        ));
    }
    if row.duration.is_finite() && row.duration < 0.0 {
        return Err(format!(
            "column duration: {} seconds is negative",
            row.duration
        ));
    }
    // The unit coordinates take logs of the learning rate and the batch size.
    if row.client_lr <= 0.0 || row.batch_size < 1.0 {
        return Err(format!(
            "client_lr {} must be > 0 and batch_size {} >= 1",
            row.client_lr, row.batch_size
        ));
    }
    if !(0.0..1.0).contains(&row.client_momentum) {
        return Err(format!(
            "column client_momentum: {} is not in [0, 1)",
            row.client_momentum
        ));
    }
    Ok(())
}

/// A client's grid file, every value checked: an error names the file, line and column.
pub fn read_client(path: &Path, client: usize) -> Result<ClientGrid> {
    let (text, sha256) = text_of(path, "client grid")?;
    let (header, lines) = super::csv_header(&text);
    let idx = grid_columns(path, &header)?;
    let mut rows: Vec<GridRow> = Vec::new();
    for (k, line) in lines.enumerate() {
        let ln = k + 2;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |msg: String| FboError::spec(path, format!("line {ln}"), msg);
        if f.len() != header.len() {
            return Err(err(format!(
                "has {} fields, the header {}",
                f.len(),
                header.len()
            )));
        }
        // A measurement may be NaN or infinite (a diverged run: the importer leaves that
        // point out); a hyperparameter may not, and text that is no number is malformed.
        let num = |c: usize, finite: bool| -> Result<f64> {
            match f[idx[c]].parse::<f64>() {
                Ok(v) if v.is_finite() || !finite => Ok(v),
                _ => Err(err(format!(
                    "column {}: {:?} is not a {}number",
                    GRID_COLUMNS[c],
                    f[idx[c]],
                    if finite { "finite " } else { "" }
                ))),
            }
        };
        let row = GridRow {
            line: ln,
            duration: num(0, false)?,
            val_loss: num(1, false)?,
            val_accuracy: num(2, false)?,
            batch_size: num(3, true)?,
            client_lr: num(4, true)?,
            client_momentum: num(5, true)?,
        };
        check_row(&row).map_err(err)?;
        if let Some(other) = rows.iter().find(|r| r.key() == row.key()) {
            return Err(err(format!(
                "the point client_lr {}, client_momentum {}, batch_size {} is also on line {}: one run per point is expected",
                row.client_lr, row.client_momentum, row.batch_size, other.line
            )));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(FboError::spec(path, "", "has a header but no grid points"));
    }
    Ok(ClientGrid {
        client,
        file: path.to_path_buf(),
        rows,
        sha256,
    })
}

/// A FedAvg grid: one Python tuple per line, `(accuracy, {'name': value, ...})`, the
/// accuracy either a number or `DeviceArray(number, dtype=float32)`; values that are not
/// numbers (an activation function object, a string) are left out.
pub fn read_fedavg(path: &Path) -> Result<FedAvgGrid> {
    let (text, _) = text_of(path, "FedAvg grid")?;
    let mut rows = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let err = |msg: &str| FboError::spec(path, format!("line {}", k + 1), msg.to_string());
        let body = line
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| err("not a tuple (accuracy, {hyperparameters})"))?;
        let (acc, dict) = body
            .split_once(", {")
            .ok_or_else(|| err("no {hyperparameters} after the accuracy"))?;
        let acc = acc.trim();
        let acc = acc
            .strip_prefix("DeviceArray(")
            .and_then(|a| a.split(',').next())
            .unwrap_or(acc);
        let test_accuracy: f64 = acc
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| err("the accuracy is not a number"))?;
        let dict = dict
            .strip_suffix('}')
            .ok_or_else(|| err("the hyperparameters do not end with }"))?;
        let mut params = BTreeMap::new();
        for item in dict.split(", '") {
            let item = item.trim().trim_start_matches('\'');
            let Some((name, value)) = item.split_once("':") else {
                return Err(err("a hyperparameter is not 'name': value"));
            };
            if let Ok(v) = value.trim().parse::<f64>() {
                params.insert(name.to_string(), v);
            }
        }
        rows.push(FedAvgRow {
            test_accuracy,
            params,
        });
    }
    if rows.is_empty() {
        return Err(FboError::spec(path, "", "holds no FedAvg grid point"));
    }
    Ok(FedAvgGrid {
        file: path.to_path_buf(),
        rows,
    })
}

/// Why a file that is not imported as a client grid is not one.
fn reason(path: &Path) -> String {
    let name = file_name(path);
    let first = text_of(path, "file")
        .ok()
        .and_then(|(t, _)| t.lines().next().map(str::to_string))
        .unwrap_or_default();
    let cols: Vec<&str> = first.split(',').map(str::trim).collect();
    if name.contains("intervals") {
        "an interval summary, not a client's grid".into()
    } else if name.contains("distribution") || first.starts_with("client_id") {
        "the clients' data distribution, not a grid".into()
    } else if GRID_COLUMNS.iter().all(|c| cols.contains(c)) {
        "has a client grid's columns but its name does not say whose (<level>_<skew>_<n>clts_clt<i>.txt)".into()
    } else {
        "not a client grid (name and columns)".into()
    }
}

/// The federations under `source` and the files skipped, with reasons. `source` may be any
/// folder of the layout, from the top (`non-IID_res/`) down to one `individual/<level>/`.
pub fn find(source: &Path) -> Result<Found> {
    let root = source
        .canonicalize()
        .map_err(|e| FboError::spec(source, "", format!("cannot read the source folder: {e}")))?;
    let files = files_under(&root)?;
    // Client files by folder, then by (level, skew, n).
    type Key = (String, String, usize);
    let mut by_dir: BTreeMap<PathBuf, BTreeMap<Key, Vec<(usize, PathBuf)>>> = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut used_fedavg: Vec<PathBuf> = Vec::new();
    for f in &files {
        match client_name(&file_name(f)) {
            Some((level, skew, n, i)) => {
                let dir = f.parent().unwrap_or(&root).to_path_buf();
                by_dir
                    .entry(dir)
                    .or_default()
                    .entry((level, skew, n))
                    .or_default()
                    .push((i, f.clone()));
            }
            None => skipped.push(f.clone()),
        }
    }
    let mut federations = Vec::new();
    let mut not_imported: Vec<Skipped> = Vec::new();
    for (dir, groups) in by_dir {
        let parties = dir.ancestors().find_map(|a| parties_of(&file_name(a)));
        let dataset = dir
            .ancestors()
            .find_map(|a| dataset_of(&file_name(a)))
            .unwrap_or_else(|| "unknown".into());
        for ((level, skew, n), mut members) in groups {
            if let Some(np) = parties
                && np != n
            {
                for (_, f) in members {
                    not_imported.push(Skipped {
                        file: f,
                        reason: format!(
                            "a file of a {n}-client federation inside a {np}-party folder"
                        ),
                    });
                }
                continue;
            }
            members.sort();
            let clients = read_members(&dir, n, &members)?;
            let missing: Vec<usize> = (0..n)
                .filter(|i| !clients.iter().any(|c| c.client == *i))
                .collect();
            let fedavg = fedavg_files(&dir, &dataset, &skew, &level, n);
            for f in &fedavg {
                used_fedavg.push(f.clone());
            }
            let fedavg = fedavg
                .iter()
                .map(|f| read_fedavg(f))
                .collect::<Result<Vec<_>>>()?;
            federations.push(Federation {
                name: format!("{dataset}-{skew}-{level}-{n}"),
                dataset: dataset.clone(),
                skew: skew.clone(),
                level: level.clone(),
                parties: n,
                folder: dir.clone(),
                clients,
                missing,
                fedavg,
            });
        }
    }
    for f in skipped {
        if used_fedavg.contains(&f) {
            continue;
        }
        let reason = skipped_reason(&f);
        not_imported.push(Skipped { file: f, reason });
    }
    not_imported.sort_by(|a, b| a.file.cmp(&b.file));
    if federations.is_empty() {
        return Err(FboError::spec(
            source,
            "",
            "holds no client grid file (<level>_<skew>_<n>clts_clt<i>.txt under individual/<level>/)",
        ));
    }
    Ok(Found {
        federations,
        skipped: not_imported,
    })
}

/// The client grids of one federation of `n` clients in `dir` (`members`: (client, file),
/// sorted): each client at most once and below n.
fn read_members(dir: &Path, n: usize, members: &[(usize, PathBuf)]) -> Result<Vec<ClientGrid>> {
    let mut clients = Vec::new();
    for (i, f) in members {
        if *i >= n {
            return Err(FboError::spec(
                f,
                "",
                format!("client {i} of a federation of {n} clients (clients are 0..{n})"),
            ));
        }
        if clients.iter().any(|c: &ClientGrid| c.client == *i) {
            return Err(FboError::spec(
                f,
                "",
                format!("client {i} has two grid files in {}", dir.display()),
            ));
        }
        clients.push(read_client(f, *i)?);
    }
    Ok(clients)
}

/// Why a file under the source is not imported: a FedAvg grid no imported federation uses,
/// or what its name and columns say it is.
fn skipped_reason(f: &Path) -> String {
    if f.components().any(|c| c.as_os_str() == "fedavg")
        || f.components()
            .any(|c| c.as_os_str() == "fed_grid_search_results")
    {
        "a FedAvg grid of a federation not imported from this folder".to_string()
    } else {
        reason(f)
    }
}

/// The FedAvg grids of a federation: `<N>_parties/fedavg/<dataset>_<skew>_skew_<level>_<N>clients.txt`
/// and the same name in a `fed_grid_search_results/` folder beside any folder above.
fn fedavg_files(dir: &Path, dataset: &str, skew: &str, level: &str, n: usize) -> Vec<PathBuf> {
    let name = format!("{dataset}_{skew}_skew_{level}_{n}clients.txt");
    let mut out = Vec::new();
    let mut look = |p: PathBuf| {
        let gz = PathBuf::from(format!("{}.gz", p.display()));
        for q in [p, gz] {
            if q.is_file() && !out.contains(&q) {
                out.push(q);
                return;
            }
        }
    };
    for a in dir.ancestors() {
        if parties_of(&file_name(a)) == Some(n) {
            look(a.join("fedavg").join(&name));
        }
        look(a.join("fed_grid_search_results").join(&name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_are_told_apart() {
        assert_eq!(
            client_name("0.1_label_10clts_clt3.txt.gz"),
            Some(("0.1".into(), "label".into(), 10, 3))
        );
        assert_eq!(
            client_name("5.0_qty_20clts_clt19.txt"),
            Some(("5.0".into(), "qty".into(), 20, 19))
        );
        for other in [
            "cifar10_label_skew_0.1_10clients_intervals.txt.gz",
            "mnist_label_skew_1.0_10clients_distribution.txt",
            "0.1_label_10clts.txt",
            "x_label_10clts_clt1.txt",
            "0.1_label_10clts_clt1.csv",
        ] {
            assert_eq!(client_name(other), None, "{other}");
        }
        assert_eq!(parties_of("20_parties"), Some(20));
        assert_eq!(
            dataset_of("SVHN_CROPPED_non-IID_label_skew").as_deref(),
            Some("svhn_cropped")
        );
    }

    #[test]
    fn fedavg_lines_of_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.txt");
        std::fs::write(
            &p,
            "(DeviceArray(0.28480002, dtype=float32), {'act_fn': <jax.custom_derivatives.custom_jvp object at 0x7f4633761550>, 'client_lr': 0.05, 'server_lr': 0.03162277660168379, 'batch_size': 16})\n\
             (0.4681, {'act_fn': 'relu', 'client_lr': 0.01, 'server_momentum': 0.9, 'batch_size': 8, 'runs': 1})\n",
        )
        .unwrap();
        let g = read_fedavg(&p).unwrap();
        assert_eq!(g.rows.len(), 2);
        assert_eq!(g.rows[0].test_accuracy, 0.28480002);
        assert_eq!(g.rows[0].params["server_lr"], 0.03162277660168379);
        assert_eq!(g.rows[0].params.len(), 3);
        assert_eq!(g.rows[1].params["server_momentum"], 0.9);
        std::fs::write(&p, "(0.4681, {'client_lr': 0.01}\n").unwrap();
        let e = read_fedavg(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("not a tuple"), "{e}");
    }

    #[test]
    fn bad_client_rows_name_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.1_label_2clts_clt0.txt");
        let head = ",start,duration,val_loss,val_accuracy,batch_size,client_lr,client_momentum\n";
        for (body, want) in [
            (
                "0,a,1.0,0.5,0.9,16,0.1,0.0\n1,a,1.0,0.5,abc,16,0.1,0.3\n",
                "line 3",
            ),
            ("0,a,1.0,0.5,1.5,16,0.1,0.0\n", "not in [0, 1]"),
            (
                "0,a,1.0,0.5,0.9,16,0.1,0.0\n1,a,1.0,0.5,0.8,16,0.1,0.0\n",
                "also on line 2",
            ),
            ("0,a,1.0,0.5,0.9,16,0.1\n", "has 7 fields"),
            ("", "no grid points"),
        ] {
            std::fs::write(&p, format!("{head}{body}")).unwrap();
            let e = read_client(&p, 0).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("clt0.txt"), "{want}: {e}");
        }
        std::fs::write(&p, ",start,duration\n0,a,1\n").unwrap();
        let e = read_client(&p, 0).unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("no column val_loss"),
            "{e}"
        );
    }
}
