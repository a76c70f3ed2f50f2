//! The source tree's layers (docs/usage.md "Layout of the source"): the folders of `src/`
//! import each other along arrows that run one way, with no circle, and `math/` imports
//! nothing of fbo's. Read from the source text: every `crate::NAME` outside comments and
//! outside a file's `#[cfg(test)]` module is an arrow from the file's folder to NAME.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// folder -> (folder it imports -> a file that does), for the top-level modules of `src/`.
fn arrows() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    // Modules only: `crate::` also reaches the root's macros (math's `multiversion!`).
    let modules: BTreeSet<String> = fs::read_dir(&src)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.trim_end_matches(".rs").to_string()
        })
        .collect();
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let text = fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for line in code.lines() {
            let line = line.split("//").next().unwrap();
            for (i, _) in line.match_indices("crate::") {
                let name: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if modules.contains(&name) && name != top {
                    out.entry(top.clone())
                        .or_default()
                        .entry(name)
                        .or_insert_with(|| rel.clone());
                }
            }
        }
    }
    out
}

/// A circle through `from`, if any (depth-first search).
fn circle(
    arrows: &BTreeMap<String, BTreeMap<String, String>>,
    from: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|p| p == from) {
        let mut c = path[i..].to_vec();
        c.push(from.to_string());
        return Some(c);
    }
    if done.contains(from) {
        return None;
    }
    path.push(from.to_string());
    for to in arrows.get(from).map(|m| m.keys()).into_iter().flatten() {
        if let Some(c) = circle(arrows, to, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(from.to_string());
    None
}

#[test]
fn the_folders_import_each_other_without_a_circle() {
    let arrows = arrows();
    assert!(
        arrows.contains_key("run") && arrows.contains_key("algorithm"),
        "the source was read: {:?}",
        arrows.keys().collect::<Vec<_>>()
    );
    let mut done = BTreeSet::new();
    for from in arrows.keys() {
        if let Some(c) = circle(&arrows, from, &mut Vec::new(), &mut done) {
            let through: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], arrows[&w[0]][&w[1]]))
                .collect();
            panic!("an import circle: {}", through.join(", "));
        }
    }
}

#[test]
fn the_layers_point_down() {
    let arrows = arrows();
    let imports = |from: &str| -> Vec<String> {
        arrows
            .get(from)
            .map(|m| m.keys().filter(|k| *k != "error").cloned().collect())
            .unwrap_or_default()
    };
    // The numerics know nothing of BO; the objectives nothing of the spec or of what
    // optimises them; nothing below the executor imports it or the command line.
    assert_eq!(
        imports("math"),
        Vec::<String>::new(),
        "math imports only itself"
    );
    for below in [
        "objective",
        "surrogate",
        "acquisition",
        "algorithm",
        "server",
        "privacy",
        "spec",
    ] {
        for above in ["run", "cli", "federation", "compare"] {
            assert!(
                !imports(below).contains(&above.to_string()),
                "{below} imports {above} ({})",
                arrows[below][above]
            );
        }
    }
    for above in ["spec", "surrogate", "algorithm", "server"] {
        assert!(
            !imports("objective").contains(&above.to_string()),
            "objective imports {above} ({})",
            arrows["objective"][above]
        );
    }
}
