//! The raw-data readers against the counts verified in data/raw/*/README.md.

mod common;
use common::raw_data;
use fbo::data::{emnist, har};

#[test]
fn har_reader_finds_the_21_subjects_with_their_row_counts() {
    let (subjects, _) = har::read(&raw_data("har")).expect("the HAR data in data/raw");
    let counts: Vec<(usize, usize)> = subjects.iter().map(|s| (s.id, s.labels.len())).collect();
    // data/raw/har/README.md, "Counts (verified)".
    let want = [
        (1, 347),
        (3, 341),
        (5, 302),
        (6, 325),
        (7, 308),
        (8, 281),
        (11, 316),
        (14, 323),
        (15, 328),
        (16, 366),
        (17, 368),
        (19, 360),
        (21, 408),
        (22, 321),
        (23, 372),
        (25, 409),
        (26, 392),
        (27, 376),
        (28, 382),
        (29, 344),
        (30, 383),
    ];
    assert_eq!(counts, want);
    let mut per_class = [0usize; 6];
    for s in &subjects {
        assert_eq!(s.x.ncols(), 561);
        assert!(s.x.iter().all(|v| (-1.0..=1.0).contains(v)));
        for &l in &s.labels {
            per_class[l] += 1;
        }
    }
    assert_eq!(per_class, [1226, 1073, 986, 1286, 1374, 1407]);
}

#[test]
fn emnist_reader_matches_the_verified_counts() {
    let (writers, _) = emnist::read(&raw_data("emnist")).expect("the EMNIST data in data/raw");
    assert_eq!(writers.len(), 50);
    let train: usize = writers.iter().map(|w| w.y_train.len()).sum();
    let valid: usize = writers.iter().map(|w| w.y_valid.len()).sum();
    assert_eq!((train, valid), (5188, 576));
    assert_eq!(writers[0].id, "f3313_11");
    assert_eq!(
        (writers[0].y_train.len(), writers[0].y_valid.len()),
        (108, 12)
    );
    assert_eq!(
        (writers[10].y_train.len(), writers[10].y_valid.len()),
        (7, 1)
    );
    let mut per_class = [0usize; 10];
    for w in &writers {
        for &l in w.y_train.iter().chain(&w.y_valid) {
            per_class[l] += 1;
        }
    }
    assert_eq!(
        per_class,
        [576, 605, 590, 582, 560, 554, 571, 592, 563, 571]
    );
    // Ink bright, background 0: about 88% of raw bytes are the white background (255 -> 0).
    let zeros = writers[0].x_train.iter().filter(|&&v| v == 0.0).count() as f64
        / writers[0].x_train.len() as f64;
    assert!((0.8..0.95).contains(&zeros), "{zeros}");
}

#[test]
fn a_corrupt_emnist_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = raw_data("emnist");
    std::fs::copy(
        src.join("femnist_digits_first50_index.csv.gz"),
        dir.path().join("femnist_digits_first50_index.csv.gz"),
    )
    .unwrap();
    let gz = std::fs::read(src.join("femnist_digits_first50_pixels.u8.gz")).unwrap();
    std::fs::write(
        dir.path().join("femnist_digits_first50_pixels.u8.gz"),
        &gz[..gz.len() - 100],
    )
    .unwrap();
    let e = emnist::read(dir.path())
        .err()
        .expect("truncated pixels must fail")
        .to_string();
    assert!(e.contains("not the expected EMNIST pixel file"), "{e}");
}
