//! The edit distance behind every "did you mean" (finding kinds in
//! `[levels]`, `explain`, `--allow`/`--deny`): a leaf the modules that
//! suggest names share.

/// Levenshtein distance, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    // The distance is at least the difference in length: far apart (a
    // huge value in a file), that bound is the answer for every "did you
    // mean" (which wants 3 or less), and costs nothing.
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la.abs_diff(lb) > 8 {
        return la.abs_diff(lb);
    }
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
