//! Federated EMNIST digits, first 50 writers (LEAF FEMNIST sample) from data/raw/emnist:
//! one agent per writer, the source's own train / validation split, 28 x 28 images. Pixels are
//! returned MNIST-style, ink bright: (255 - byte) / 255 in [0, 1].

use super::{as_text, read_checked, read_gz_checked};
use crate::error::{FboError, Result};
use ndarray::Array2;
use std::path::Path;

pub const PIXELS: usize = 28 * 28;
pub const CLASSES: usize = 10;
const INDEX_SHA256: &str = "c8a146531aae77925a4780f49aeb5a20c870fe146e15b441400bae00b14a30e6";
const PIXELS_GZ_SHA256: &str = "9a7d80ccf8eaacda40fe6e948e766374528053e66addb99a5c30e2421b09af55";
const HEADER: &str = "image,writer_index,writer_id,split,label,source_file,source_pos";

/// One writer's images: rows of 784 pixels in [0, 1].
pub struct Writer {
    pub id: String,
    pub x_train: Array2<f64>,
    pub y_train: Vec<usize>,
    pub x_valid: Array2<f64>,
    pub y_valid: Vec<usize>,
    /// Image numbers (rows of the index CSV) of the training and validation images.
    pub train_images: Vec<usize>,
    pub valid_images: Vec<usize>,
}

/// One image of the index CSV.
struct Row {
    writer: usize,
    id: String,
    train: bool,
    label: usize,
    image: usize,
}

/// Reads the index and the pixel stream from the EMNIST folder; returns the writers in order
/// and the pixel file's sha256.
pub fn read(dir: &Path) -> Result<(Vec<Writer>, String)> {
    let index_path = dir.join("femnist_digits_first50_index.csv");
    let pixel_path = dir.join("femnist_digits_first50_pixels.u8.gz");
    let (index, _) = read_checked(&index_path, Some(INDEX_SHA256), "EMNIST index CSV")?;
    let (pixels, sha) = read_gz_checked(&pixel_path, PIXELS_GZ_SHA256, "EMNIST pixel file")?;
    let rows = parse_index(&index_path, as_text(&index_path, &index)?)?;
    if pixels.len() != rows.len() * PIXELS {
        return Err(FboError::spec(
            &pixel_path,
            "",
            format!(
                "holds {} bytes, expected {} images x {PIXELS}",
                pixels.len(),
                rows.len()
            ),
        ));
    }
    Ok((writers(&index_path, &rows, &pixels)?, sha))
}

/// The index CSV's rows, each checked (images in order, a known split, a digit label).
fn parse_index(index_path: &Path, text: &str) -> Result<Vec<Row>> {
    let err = |line: usize, m: String| FboError::spec(index_path, format!("line {line}"), m);
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(err(1, format!("header must be `{HEADER}`")));
    }
    let mut rows = Vec::new();
    for (k, line) in lines.enumerate() {
        let ln = k + 2;
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 7 {
            return Err(err(ln, format!("has {} fields, expected 7", f.len())));
        }
        let image: usize = f[0]
            .parse()
            .map_err(|_| err(ln, "image is not an integer".into()))?;
        if image != k {
            return Err(err(
                ln,
                format!("image {image} out of order (expected {k})"),
            ));
        }
        let writer: usize = f[1]
            .parse()
            .map_err(|_| err(ln, "writer_index is not an integer".into()))?;
        let train = match f[3] {
            "train" => true,
            "val" => false,
            o => return Err(err(ln, format!("split {o:?} is not train or val"))),
        };
        let label: usize = f[4]
            .parse()
            .ok()
            .filter(|&l| l < CLASSES)
            .ok_or_else(|| err(ln, format!("label {:?} is not a digit 0-9", f[4])))?;
        rows.push(Row {
            writer,
            id: f[2].to_string(),
            train,
            label,
            image,
        });
    }
    Ok(rows)
}

/// The writers in order, each with its training and validation images from `pixels`.
fn writers(index_path: &Path, rows: &[Row], pixels: &[u8]) -> Result<Vec<Writer>> {
    let n_writers = rows.iter().map(|r| r.writer + 1).max().unwrap_or(0);
    let mut writers = Vec::with_capacity(n_writers);
    for w in 0..n_writers {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.writer == w).collect();
        let Some(first) = mine.first() else {
            return Err(FboError::spec(
                index_path,
                "",
                format!("writer {w} has no images"),
            ));
        };
        let pick = |train: bool| -> (Array2<f64>, Vec<usize>, Vec<usize>) {
            let sel: Vec<&&Row> = mine.iter().filter(|r| r.train == train).collect();
            let x = Array2::from_shape_fn((sel.len(), PIXELS), |(i, p)| {
                (255.0 - pixels[sel[i].image * PIXELS + p] as f64) / 255.0
            });
            let labels = sel.iter().map(|r| r.label).collect();
            (x, labels, sel.iter().map(|r| r.image).collect())
        };
        let (x_train, y_train, train_images) = pick(true);
        let (x_valid, y_valid, valid_images) = pick(false);
        if y_train.is_empty() || y_valid.is_empty() {
            return Err(FboError::spec(
                index_path,
                "",
                format!("writer {w} lacks a train or val image"),
            ));
        }
        writers.push(Writer {
            id: first.id.clone(),
            x_train,
            y_train,
            x_valid,
            y_valid,
            train_images,
            valid_images,
        });
    }
    Ok(writers)
}
