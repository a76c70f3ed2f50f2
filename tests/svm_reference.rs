//! The landmine SVM's validation AUC against an independent, well-known implementation.
//!
//! Reference values: scikit-learn 1.9.1 `SVC(kernel="rbf", C=C, gamma=gamma, tol=1e-12,
//! shrinking=True, max_iter=-1)` (libsvm inside), trained on fbo's own split of each field
//! (`stratified_half_split`, seed 0; the same rows fbo tabulate writes to split.csv), scored by
//! `roc_auc_score(y_valid, decision_function(X_valid))`. Computed 2026-11-22 on this project's
//! machine from ../shared/data/landmine/landmine.csv (sha256 3947...3fc). The tight tolerance
//! makes both solvers report the converged optimum; fbo stops at 1e-3 min(1, C)^2.

use fbo::data::landmine;
use fbo::tabulate::{AgentSplit, svm_auc};
use std::path::Path;

#[test]
fn landmine_svm_auc_matches_libsvm() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/landmine/landmine.csv");
    let (fields, _) =
        landmine::read(&path).expect("the shared landmine data beside the repository");
    // (field index, C, gamma, scikit-learn AUC)
    let reference = [
        (0, 0.0001, 0.01, 0.8901538461538462),
        (3, 0.0001, 0.01, 0.8273469387755102),
        (0, 4.1702783, 3.0303024, 0.6832307692307692),
        (3, 1.0, 0.5, 0.7616326530612245),
        (7, 10.0, 0.01, 0.7353592909148465),
        (15, 7.2032729, 1.4760913, 0.6014492753623188),
        (28, 0.5, 10.0, 0.5141223155929039),
        (20, 0.1588, 0.17, 0.6189135941457923),
    ];
    for (a, c, g, want) in reference {
        let (split, _) = AgentSplit::landmine(&fields[a], 0, a);
        let got = svm_auc(&split, c, g);
        // One swapped positive-negative pair moves the AUC by about 1/(12 x 240) = 0.0003.
        assert!(
            (got - want).abs() < 0.002,
            "field {a}, C = {c}, gamma = {g}: fbo {got}, libsvm {want}"
        );
    }
}

#[test]
fn a_corrupt_landmine_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/landmine/landmine.csv");
    let text = std::fs::read_to_string(src).unwrap();
    let truncated = dir.path().join("landmine.csv");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let err = landmine::read(&truncated)
        .err()
        .expect("a truncated file must fail")
        .to_string();
    assert!(
        err.contains("not the expected landmine CSV") && err.contains("sha256"),
        "{err}"
    );
}
