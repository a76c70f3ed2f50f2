//! The spec as copied beside its results. Its file paths (`objective.table`,
//! `objective.data`) are relative to the spec, so a verbatim copy would not run from the
//! results folder; and two copies of one experiment differ in comments and paths, so the
//! text alone cannot say whether a folder holds this experiment's results.

use std::path::{Component, Path, PathBuf};

/// Keys under [objective] whose values are paths relative to the spec file.
const PATH_KEYS: [&str; 3] = ["table", "data", "workdir"];

fn absolute(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(p)
    };
    abs.canonicalize().unwrap_or_else(|_| lexical_normal(&abs))
}

fn lexical_normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `target` as a path relative to the folder `base` (both made absolute first).
pub fn relative(target: &Path, base: &Path) -> PathBuf {
    let t = absolute(target);
    let b = absolute(base);
    let tc: Vec<_> = t.components().collect();
    let bc: Vec<_> = b.components().collect();
    let common = tc.iter().zip(&bc).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..bc.len() {
        out.push("..");
    }
    for c in &tc[common..] {
        out.push(c);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The path values of the spec, as (key, value as written).
fn path_values(table: &toml::Table) -> Vec<(&'static str, String)> {
    let Some(obj) = table.get("objective").and_then(|o| o.as_table()) else {
        return Vec::new();
    };
    let mut out: Vec<(&'static str, String)> = PATH_KEYS
        .iter()
        .filter_map(|&k| {
            obj.get(k)
                .and_then(|v| v.as_str())
                .map(|v| (k, v.to_string()))
        })
        .collect();
    // A command runs in the spec's folder unless told otherwise: a copy elsewhere must say
    // where that was.
    if obj.get("kind").and_then(|k| k.as_str()) == Some("command") && !obj.contains_key("workdir") {
        out.push(("workdir", ".".into()));
    }
    out
}

/// A form of the spec that is the same for every copy of one experiment: parsed, its paths
/// made absolute, written back with sorted keys (comments and layout dropped).
pub fn canonical(source: &str, spec_path: &Path) -> String {
    let Ok(mut table) = source.parse::<toml::Table>() else {
        return source.to_string();
    };
    let base = spec_path.parent().unwrap_or(Path::new("."));
    for (k, v) in path_values(&table) {
        let abs = absolute(&base.join(&v));
        if let Some(obj) = table.get_mut("objective").and_then(|o| o.as_table_mut()) {
            obj.insert(
                k.to_string(),
                toml::Value::String(abs.to_string_lossy().into_owned()),
            );
        }
    }
    toml::to_string(&table).unwrap_or_else(|_| source.to_string())
}

/// The spec's settings without its comments and layout, path values as written (relative to
/// wherever the spec is kept): what two copies of one experiment on different machines share.
pub fn as_written(source: &str) -> String {
    match source.parse::<toml::Table>() {
        Ok(table) => toml::to_string(&table).unwrap_or_else(|_| source.to_string()),
        Err(_) => source.to_string(),
    }
}

/// The spec text to write into `dest_dir`: as written, with each path value replaced by the
/// same file seen from `dest_dir`, so `fbo run dest_dir/spec.toml` runs the same experiment.
/// Comments are kept where the value can be replaced in place.
pub fn portable(source: &str, spec_path: &Path, dest_dir: &Path) -> String {
    let Ok(table) = source.parse::<toml::Table>() else {
        return source.to_string();
    };
    let values = path_values(&table);
    if values.is_empty() {
        return source.to_string();
    }
    let base = spec_path.parent().unwrap_or(Path::new("."));
    let mut text = source.to_string();
    let mut in_place = true;
    let mut rewritten = table.clone();
    for (k, v) in &values {
        let new = relative(&base.join(v), dest_dir)
            .to_string_lossy()
            .into_owned();
        let new_lit = toml::Value::String(new.clone()).to_string();
        let found: Vec<String> = [toml::Value::String(v.clone()).to_string(), format!("'{v}'")]
            .into_iter()
            .filter(|lit| text.matches(lit.as_str()).count() == 1)
            .collect();
        match found.first() {
            Some(lit) => text = text.replacen(lit.as_str(), &new_lit, 1),
            None => in_place = false,
        }
        if let Some(obj) = rewritten
            .get_mut("objective")
            .and_then(|o| o.as_table_mut())
        {
            obj.insert(k.to_string(), toml::Value::String(new));
        }
    }
    // In-place replacement must give exactly the rewritten table; otherwise write the table.
    if in_place && text.parse::<toml::Table>().ok().as_ref() == Some(&rewritten) {
        return text;
    }
    format!(
        "# Copied by fbo with its paths made relative to this folder (comments dropped).\n{}",
        toml::to_string(&rewritten).unwrap_or(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_walk_up_and_down() {
        assert_eq!(
            relative(Path::new("/a/b/c/t.toml"), Path::new("/a/x/y")),
            PathBuf::from("../../b/c/t.toml")
        );
        assert_eq!(
            relative(Path::new("/a/t"), Path::new("/a")),
            PathBuf::from("t")
        );
    }

    #[test]
    fn a_portable_copy_points_at_the_same_file_and_keeps_comments() {
        let src = "# mine\nname = \"x\"\n[objective]\nkind = \"table\"\ntable = \"../data/t/table.toml\" # here\n";
        let spec = Path::new("/p/configs/x.toml");
        let out = portable(src, spec, Path::new("/p/results/x"));
        assert!(out.contains("# mine") && out.contains("# here"), "{out}");
        assert!(out.contains("table = \"../../data/t/table.toml\""), "{out}");
        // Both copies have one canonical form.
        assert_eq!(
            canonical(src, spec),
            canonical(&out, Path::new("/p/results/x/spec.toml"))
        );
        // Without paths the text is unchanged.
        assert_eq!(portable("a = 1\n", spec, Path::new("/q")), "a = 1\n");
    }
}
