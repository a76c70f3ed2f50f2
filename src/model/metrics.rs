//! Validation metrics.

/// Area under the ROC curve of `scores` for binary `labels` (true = positive): the probability
/// that a random positive outscores a random negative, ties counting 1/2 (Mann-Whitney U), as
/// scikit-learn's roc_auc_score computes it. None if a class is absent.
pub fn roc_auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    let n = scores.len();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Average ranks (1-based) over tied groups.
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            if labels[k] {
                rank_sum_pos += avg;
            }
        }
        i = j + 1;
    }
    let n_pos = labels.iter().filter(|&&l| l).count() as f64;
    let n_neg = n as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return None;
    }
    Some((rank_sum_pos - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(scores: &[f64], labels: &[bool]) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for (i, &li) in labels.iter().enumerate() {
            for (j, &lj) in labels.iter().enumerate() {
                if li && !lj {
                    den += 1.0;
                    num += if scores[i] > scores[j] {
                        1.0
                    } else if scores[i] == scores[j] {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
        }
        num / den
    }

    #[test]
    fn auc_equals_the_pairwise_definition_with_ties() {
        let scores = [0.1, 0.4, 0.35, 0.8, 0.4, 0.4, -1.0, 0.8];
        let labels = [false, true, false, true, false, true, false, false];
        assert!((roc_auc(&scores, &labels).unwrap() - brute(&scores, &labels)).abs() < 1e-15);
        assert_eq!(roc_auc(&[1.0, 2.0], &[true, false]), Some(0.0));
        assert_eq!(roc_auc(&[1.0, 2.0], &[false, true]), Some(1.0));
        assert_eq!(roc_auc(&[1.0, 2.0], &[true, true]), None);
    }
}
