//! The output folder of a run, sweep or tabulation, claimed by one process at a time.
//!
//! Two rules keep a user's files safe. An exclusive lock (`.fbo-lock`, held for the whole
//! command) stops a second fbo from writing into a folder in use. A manifest
//! (`.fbo-manifest`) lists every file and folder fbo wrote there and for which experiment, so
//! fbo replaces or removes only its own files, and refuses a folder that holds another
//! experiment's results (or files fbo would overwrite but did not write) unless told
//! `--overwrite`.

use crate::error::{FboError, Result};
use crate::run::output::write_atomic;
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const MANIFEST: &str = ".fbo-manifest";
pub const LOCK: &str = ".fbo-lock";
/// What a folder's `parts/` was made for (see `OutDir::parts`).
pub const PARTS_FINGERPRINT: &str = "parts/fingerprint";
const MAGIC: &str = "fbo-manifest 1";

/// Which experiment a folder's results belong to: the same spec file (edited or not), or
/// any copy of the same experiment (`spec::portable::canonical`).
#[derive(Clone, Debug)]
pub struct Identity {
    /// run, sweep or tabulate.
    pub kind: &'static str,
    /// The spec file, absolute.
    pub path: String,
    /// A hash of the spec's canonical form.
    pub content: String,
}

impl Identity {
    pub fn new(kind: &'static str, spec_path: &Path, canonical: &str) -> Identity {
        use sha2::{Digest, Sha256};
        let abs = spec_path
            .canonicalize()
            .unwrap_or_else(|_| spec_path.to_path_buf());
        let digest = Sha256::digest(canonical.as_bytes());
        Identity {
            kind,
            path: abs.to_string_lossy().into_owned(),
            content: crate::math::hex::bytes(&digest),
        }
    }

    fn same(&self, other: &Identity) -> bool {
        self.kind == other.kind && (self.path == other.path || self.content == other.content)
    }
}

#[derive(Default)]
struct Manifest {
    identity: Option<Identity>,
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
}

impl Manifest {
    /// Whose results these are, for a refusal: "the run of /path/spec.toml".
    fn owner(&self) -> String {
        self.identity
            .as_ref()
            .map(|o| format!("the {} of {}", o.kind, o.path))
            .unwrap_or_else(|| "an unreadable experiment".into())
    }
}

fn read_manifest(root: &Path) -> Option<Manifest> {
    let text = fs::read_to_string(root.join(MANIFEST)).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return None;
    }
    let mut m = Manifest::default();
    let (mut kind, mut path, mut content) = (None, None, None);
    for line in lines {
        let Some((tag, value)) = line.split_once(' ') else {
            continue;
        };
        match tag {
            "kind" => kind = Some(value.to_string()),
            "spec" => path = Some(value.to_string()),
            "content" => content = Some(value.to_string()),
            "file" => {
                m.files.insert(value.to_string());
            }
            "dir" => {
                m.dirs.insert(value.to_string());
            }
            _ => {}
        }
    }
    if let (Some(k), Some(p), Some(c)) = (kind, path, content) {
        let kind = ["run", "sweep", "tabulate", "import"]
            .into_iter()
            .find(|&x| x == k)
            .unwrap_or("unknown");
        m.identity = Some(Identity {
            kind,
            path: p,
            content: c,
        });
    }
    Some(m)
}

fn manifest_text(id: &Identity, files: &BTreeSet<String>, dirs: &BTreeSet<String>) -> String {
    let mut s = format!(
        "{MAGIC}\nkind {}\nspec {}\ncontent {}\n",
        id.kind, id.path, id.content
    );
    for d in dirs {
        s += &format!("dir {d}\n");
    }
    for f in files {
        s += &format!("file {f}\n");
    }
    s
}

/// The temporary sibling `write_atomic` uses for `path` (left behind only by a crash).
fn tmp_sibling(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    Some(path.with_file_name(format!(".{name}.tmp.{}", std::process::id())))
}

/// Removes what a manifest lists under `root` (files, then its folders when empty,
/// deepest first), recursing into sub-folders that have manifests of their own. Never
/// touches a file the manifest does not list.
fn remove_listed(root: &Path, m: &Manifest) -> Result<()> {
    for f in &m.files {
        let p = root.join(f);
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FboError::io(&p, e)),
        }
        if let Some(t) = tmp_sibling(&p) {
            let _ = fs::remove_file(t);
        }
    }
    let mut dirs: Vec<&String> = m.dirs.iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for d in dirs {
        let p = root.join(d);
        if let Some(sub) = read_manifest(&p) {
            // A nested folder of ours (a sweep point): locked while it is emptied.
            let lock = lock(&p)?;
            remove_listed(&p, &sub)?;
            let _ = fs::remove_file(p.join(MANIFEST));
            drop(lock);
            let _ = fs::remove_file(p.join(LOCK));
        }
        // Only if empty: a user's file inside keeps the folder.
        let _ = fs::remove_dir(&p);
    }
    Ok(())
}

fn lock(root: &Path) -> Result<File> {
    lock_as(root, false)
}

/// The folder's lock: exclusive (one command owns the folder), or shared (shards of one
/// experiment, each writing only its own units; an exclusive holder keeps them out).
fn lock_as(root: &Path, shared: bool) -> Result<File> {
    try_lock_file(&root.join(LOCK), shared)?.ok_or_else(|| {
        FboError::spec(
            root,
            "--out",
            if shared {
                "is in use by an fbo process that is not a shard (it holds .fbo-lock there); wait for it to finish, or choose another --out"
            } else {
                "is in use by another fbo process (it holds .fbo-lock there); wait for it to finish, or choose another --out"
            },
        )
    })
}

/// `path` (created if missing, never truncated) locked shared or exclusive; None while
/// another process holds a lock that excludes it.
fn try_lock_file(path: &Path, shared: bool) -> Result<Option<File>> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| FboError::io(path, e))?;
    let got = if shared {
        f.try_lock_shared()
    } else {
        f.try_lock()
    };
    match got {
        Ok(()) => Ok(Some(f)),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(e)) => Err(FboError::io(path, e)),
    }
}

/// The folder's manifest, if it was written for the experiment `id`.
fn manifest_of(root: &Path, id: &Identity) -> Option<Manifest> {
    read_manifest(root).filter(|m| m.identity.as_ref().is_some_and(|old| old.same(id)))
}

/// Whether the folder's manifest was written for exactly this spec text (not only the same
/// spec file, which may have been edited since).
pub fn written_for(root: &Path, id: &Identity) -> bool {
    read_manifest(root)
        .and_then(|m| m.identity)
        .is_some_and(|old| old.kind == id.kind && old.content == id.content)
}

/// Refuses (exit 2) a folder that holds results fbo did not write for the experiment `id`:
/// another experiment's (per its manifest), or result files without a manifest. What
/// `--status` checks before it reports, so that it never calls someone else's files done.
pub fn check_owner(root: &Path, id: &Identity) -> Result<()> {
    if !root.exists() {
        return Ok(());
    }
    match read_manifest(root) {
        Some(m) if m.identity.as_ref().is_some_and(|old| old.same(id)) => Ok(()),
        Some(m) => Err(FboError::spec(
            root,
            "--out",
            format!(
                "holds the results of another experiment ({}, per its {MANIFEST}), not of this spec; choose the --out this spec was run with",
                m.owner()
            ),
        )),
        None => {
            let found: Vec<&str> = ["trace.csv", "summary.csv", "sweep.csv", "parts", "points"]
                .into_iter()
                .filter(|f| root.join(f).exists())
                .collect();
            if found.is_empty() {
                Ok(())
            } else {
                Err(FboError::spec(
                    root,
                    "--out",
                    format!(
                        "has {} but no {MANIFEST}: these are not results fbo wrote for this spec; choose the --out this spec was run with",
                        found.join(", ")
                    ),
                ))
            }
        }
    }
}

/// A shard's lock: shards starting together queue for the short set-up of a new folder
/// (exclusive) instead of failing; an fbo that is not a shard holding the folder for long
/// still refuses them, after a minute.
fn lock_waiting(root: &Path, shared: bool) -> Result<File> {
    let start = std::time::Instant::now();
    loop {
        match lock_as(root, shared) {
            Err(FboError::Spec { .. }) if start.elapsed().as_secs() < 60 => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Whether some process holds the lock of `file` (a unit's claim), without waiting.
pub fn is_locked(file: &Path) -> bool {
    File::open(file).is_ok_and(|f| matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)))
}

/// Writes `rel` into a results folder that another command (run, sweep) claimed, such as
/// `fbo compare`'s compare.csv beside a trace: waits for no one (a folder in use is refused)
/// and lists the file in the folder's manifest, so a later run removes it with the results
/// it describes. A folder without a manifest (written by hand, or by an older fbo) just gets
/// the file.
pub fn write_beside(root: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    if !root.join(MANIFEST).exists() {
        return write_atomic(&root.join(rel), bytes);
    }
    let held = lock(root)?;
    if let Some(m) = read_manifest(root)
        && !m.files.contains(rel)
    {
        let path = root.join(MANIFEST);
        OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("file {rel}\n").as_bytes()))
            .map_err(|e| FboError::io(&path, e))?;
    }
    let res = write_atomic(&root.join(rel), bytes);
    drop(held);
    res
}

pub struct OutDir {
    root: PathBuf,
    identity: Identity,
    _lock: File,
    /// Shared with the other shards of one experiment: never rewrite the manifest.
    shared: bool,
    state: Mutex<State>,
}

struct State {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
    /// Written (or kept on purpose) by this command: what `prune` leaves.
    now: BTreeSet<String>,
    log: File,
}

/// How to claim a folder.
pub struct Claim<'a> {
    pub identity: Identity,
    /// Paths (relative to the folder) this command will write: an existing one that fbo did
    /// not write is refused unless `overwrite`.
    pub planned: &'a [String],
    pub overwrite: bool,
    /// A shard: shares the folder with the other shards of the same experiment. The folder
    /// is set up (manifest, checks) under the exclusive lock by the first, and a shard
    /// never rewrites the manifest, only appends to it; `overwrite` is not allowed.
    pub shared: bool,
}

impl OutDir {
    /// Creates (if needed), locks and checks the folder. Call it after every check of the
    /// input, so that invalid input leaves nothing behind.
    pub fn claim(root: &Path, claim: Claim<'_>) -> Result<OutDir> {
        if root.exists() && !root.is_dir() {
            return Err(FboError::spec(
                root,
                "--out",
                "exists and is not a folder; choose another --out",
            ));
        }
        let created = !root.exists();
        let had_lock = root.join(LOCK).exists();
        fs::create_dir_all(root).map_err(|e| FboError::io(root, e))?;
        // A refusal leaves the folder as it found it: no lock file of ours behind.
        let refuse = |msg: String| -> Result<OutDir> {
            if !had_lock {
                let _ = fs::remove_file(root.join(LOCK));
            }
            if created {
                let _ = fs::remove_dir(root);
            }
            Err(FboError::spec(root, "--out", msg))
        };
        // A shard joining a folder already set up for its experiment takes the shared lock
        // and appends to the manifest as it is.
        let id = claim.identity;
        if claim.shared
            && let Some(m) = manifest_of(root, &id)
        {
            let lock = lock_waiting(root, true)?;
            // Read again under the lock: the set-up may have finished meanwhile.
            let m = read_manifest(root).unwrap_or(m);
            return OutDir::opened(root, id, lock, m.files, m.dirs, true);
        }
        let lock = if claim.shared {
            lock_waiting(root, false)?
        } else {
            lock(root)?
        };
        // Another shard may have set the folder up while this one waited.
        if claim.shared && manifest_of(root, &id).is_some() {
            drop(lock);
            return OutDir::claim(
                root,
                Claim {
                    identity: id,
                    ..claim
                },
            );
        }
        let (files, dirs) = match read_manifest(root) {
            Some(m) if m.identity.as_ref().is_some_and(|old| old.same(&id)) => (m.files, m.dirs),
            Some(m) => {
                if !claim.overwrite {
                    return refuse(format!(
                        "holds the results of another experiment ({}, per its {MANIFEST}); pass --overwrite to replace them (fbo removes only the files it wrote there), or choose another --out",
                        m.owner()
                    ));
                }
                remove_listed(root, &m)?;
                (BTreeSet::new(), BTreeSet::new())
            }
            None => {
                let foreign: Vec<&String> = claim
                    .planned
                    .iter()
                    .filter(|p| root.join(p).exists())
                    .collect();
                if !foreign.is_empty() && !claim.overwrite {
                    let list: Vec<&str> = foreign.iter().take(5).map(|s| s.as_str()).collect();
                    return refuse(format!(
                        "already has {}{}, which fbo did not write (there is no {MANIFEST}); pass --overwrite to replace them, or choose another --out",
                        list.join(", "),
                        if foreign.len() > 5 { ", ..." } else { "" }
                    ));
                }
                (BTreeSet::new(), BTreeSet::new())
            }
        };
        write_atomic(
            &root.join(MANIFEST),
            manifest_text(&id, &files, &dirs).as_bytes(),
        )?;
        // A shard that set the folder up lets the other shards in: the exclusive lock
        // becomes a shared one (another shard may take the exclusive one in between only to
        // find the manifest it needs and share too).
        let lock = if claim.shared {
            drop(lock);
            lock_waiting(root, true)?
        } else {
            lock
        };
        OutDir::opened(root, id, lock, files, dirs, claim.shared)
    }

    /// The claimed folder, appending to its manifest as it stands.
    fn opened(
        root: &Path,
        identity: Identity,
        lock: File,
        files: BTreeSet<String>,
        dirs: BTreeSet<String>,
        shared: bool,
    ) -> Result<OutDir> {
        let mpath = root.join(MANIFEST);
        let log = OpenOptions::new()
            .append(true)
            .open(&mpath)
            .map_err(|e| FboError::io(&mpath, e))?;
        Ok(OutDir {
            root: root.to_path_buf(),
            identity,
            _lock: lock,
            shared,
            state: Mutex::new(State {
                files,
                dirs,
                now: BTreeSet::new(),
                log,
            }),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Whether fbo wrote `rel` here (now or before).
    pub fn owns(&self, rel: &str) -> bool {
        let s = self.state.lock().expect("manifest lock");
        s.files.contains(rel) || s.dirs.contains(rel)
    }

    fn note(&self, tag: &str, rel: &str) -> Result<()> {
        let mut s = self.state.lock().expect("manifest lock");
        s.now.insert(rel.to_string());
        let set = if tag == "dir" {
            &mut s.dirs
        } else {
            &mut s.files
        };
        if set.insert(rel.to_string()) {
            // Listed before the file exists: a crash can leave a listed file missing, never
            // an unlisted file of ours.
            let line = format!("{tag} {rel}\n");
            let path = self.root.join(MANIFEST);
            s.log
                .write_all(line.as_bytes())
                .and_then(|_| s.log.flush())
                .map_err(|e| FboError::io(&path, e))?;
        }
        Ok(())
    }

    /// Writes `rel` atomically and lists it.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        self.note("file", rel)?;
        write_atomic(&self.root.join(rel), bytes)
    }

    /// Lists `rel` as a file fbo appends to (a journal) and keeps it: it is opened in place,
    /// not rewritten.
    pub fn append_file(&self, rel: &str) -> Result<PathBuf> {
        self.note("file", rel)?;
        Ok(self.root.join(rel))
    }

    /// The units of `todo` this process may compute, with the locks that keep them its own
    /// until they are dropped: each unit's claim file (`claim(unit)`, listed) is locked, and
    /// a unit whose claim another process holds is left to it. The locks die with their
    /// process, so a killed shard blocks nothing.
    pub fn claim_units<T>(
        &self,
        todo: Vec<T>,
        claim: impl Fn(&T) -> String,
    ) -> Result<(Vec<T>, Vec<File>)> {
        let (mut mine, mut locks) = (Vec::new(), Vec::new());
        for unit in todo {
            if let Some(lock) = try_lock_file(&self.append_file(&claim(&unit))?, false)? {
                mine.push(unit);
                locks.push(lock);
            }
        }
        Ok((mine, locks))
    }

    /// Marks a file already here (from an earlier, interrupted invocation) as kept.
    pub fn keep(&self, rel: &str) {
        self.state
            .lock()
            .expect("manifest lock")
            .now
            .insert(rel.to_string());
    }

    /// Creates the folder `rel` (and lists it if fbo created it).
    pub fn create_dir(&self, rel: &str) -> Result<PathBuf> {
        let p = self.root.join(rel);
        if !p.is_dir() {
            // Parents first, so each created folder is listed.
            let mut acc = String::new();
            for part in rel.split('/') {
                if !acc.is_empty() {
                    acc.push('/');
                }
                acc.push_str(part);
                let q = self.root.join(&acc);
                if !q.is_dir() {
                    self.note("dir", &acc)?;
                    // Another shard may have made it a moment ago.
                    match fs::create_dir(&q) {
                        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                            return Err(FboError::io(&q, e));
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut s = self.state.lock().expect("manifest lock");
        s.now.insert(rel.to_string());
        Ok(p)
    }

    /// Opens `parts/`, where pieces of work (runs, agents) are saved as they finish, and
    /// says whether the pieces already there may be resumed: only if they were made with the
    /// same `fingerprint` (spec, options, format). Otherwise fbo's own pieces are removed
    /// first. The fingerprint is then (re)written.
    /// Whether `parts/` holds pieces fbo made with another fingerprint, which `parts` would
    /// remove: a shard or a merge must refuse instead, as they are other processes' work.
    pub fn parts_made_otherwise(&self, fingerprint: &str) -> bool {
        self.owns(PARTS_FINGERPRINT)
            && fs::read_to_string(self.path(PARTS_FINGERPRINT)).is_ok_and(|f| f != fingerprint)
    }

    pub fn parts(&self, fingerprint: &str) -> Result<(PathBuf, bool)> {
        if self.shared {
            // A shard never removes parts or rewrites the manifest: another shard may be
            // writing both (its notes would go to a replaced file and be lost). Parts made
            // with other settings were refused before (`parts_made_otherwise`); each part is
            // still checked before it counts as done.
            let dir = self.create_dir("parts")?;
            self.write(PARTS_FINGERPRINT, fingerprint.as_bytes())?;
            return Ok((dir, true));
        }
        let reusable = self.owns(PARTS_FINGERPRINT)
            && fs::read_to_string(self.path(PARTS_FINGERPRINT)).is_ok_and(|s| s == fingerprint);
        if !reusable {
            self.remove_under("parts/")?;
        }
        let dir = self.create_dir("parts")?;
        self.write(PARTS_FINGERPRINT, fingerprint.as_bytes())?;
        Ok((dir, reusable))
    }

    /// Whether `rel`, written by an earlier invocation, is here to be resumed; if so it is
    /// kept (not pruned).
    pub fn resume(&self, rel: &str) -> bool {
        let here = self.owns(rel) && self.path(rel).exists();
        if here {
            self.keep(rel);
        }
        here
    }

    /// Removes the files fbo wrote under `prefix` (say "parts/") and the folders it created
    /// there when empty, leaving anything else.
    pub fn remove_under(&self, prefix: &str) -> Result<()> {
        let m = {
            let mut s = self.state.lock().expect("manifest lock");
            let files: BTreeSet<String> = s
                .files
                .iter()
                .filter(|f| f.starts_with(prefix))
                .cloned()
                .collect();
            let dir = prefix.trim_end_matches('/');
            let dirs: BTreeSet<String> = s
                .dirs
                .iter()
                .filter(|d| d.starts_with(prefix) || *d == dir)
                .cloned()
                .collect();
            s.files.retain(|f| !files.contains(f));
            s.dirs.retain(|d| !dirs.contains(d));
            s.now.retain(|f| !f.starts_with(prefix) && f != dir);
            Manifest {
                identity: None,
                files,
                dirs,
            }
        };
        remove_listed(&self.root, &m)?;
        self.rewrite()
    }

    /// Removes what an earlier invocation wrote here and this one did not (a result file of
    /// an algorithm no longer in the spec, a point no longer in the sweep). Call at the end
    /// of a complete command.
    pub fn prune(&self) -> Result<()> {
        let m = {
            let mut s = self.state.lock().expect("manifest lock");
            let now = s.now.clone();
            let stale_files: BTreeSet<String> = s
                .files
                .iter()
                .filter(|f| !now.contains(*f))
                .cloned()
                .collect();
            let stale_dirs: BTreeSet<String> = s
                .dirs
                .iter()
                .filter(|d| {
                    !now.iter()
                        .any(|n| n == *d || n.starts_with(&format!("{d}/")))
                })
                .cloned()
                .collect();
            s.files.retain(|f| !stale_files.contains(f));
            s.dirs.retain(|d| !stale_dirs.contains(d));
            Manifest {
                identity: None,
                files: stale_files,
                dirs: stale_dirs,
            }
        };
        remove_listed(&self.root, &m)?;
        self.rewrite()
    }

    fn rewrite(&self) -> Result<()> {
        let mut s = self.state.lock().expect("manifest lock");
        let mpath = self.root.join(MANIFEST);
        write_atomic(
            &mpath,
            manifest_text(&self.identity, &s.files, &s.dirs).as_bytes(),
        )?;
        s.log = OpenOptions::new()
            .append(true)
            .open(&mpath)
            .map_err(|e| FboError::io(&mpath, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(content: &str) -> Identity {
        Identity::new(
            "run",
            Path::new(&format!("/nonexistent/{content}.toml")),
            content,
        )
    }

    fn claim(root: &Path, content: &str, planned: &[String], overwrite: bool) -> Result<OutDir> {
        OutDir::claim(
            root,
            Claim {
                identity: id(content),
                planned,
                overwrite,
                shared: false,
            },
        )
    }

    #[test]
    fn a_second_claim_on_a_locked_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = claim(dir.path(), "a", &[], false).unwrap();
        let e = claim(dir.path(), "a", &[], false).err().unwrap();
        assert!(e.to_string().contains("in use by another fbo"), "{e}");
        assert_eq!(e.exit_code(), 2);
        drop(a);
        claim(dir.path(), "a", &[], false).unwrap();
    }

    #[test]
    fn another_experiments_folder_needs_overwrite_and_loses_only_fbos_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        {
            let o = claim(root, "a", &[], false).unwrap();
            o.create_dir("parts").unwrap();
            o.write("parts/a000.csv", b"x\n").unwrap();
            o.write("privacy.csv", b"p\n").unwrap();
        }
        fs::write(root.join("parts/notes.txt"), "mine").unwrap();
        fs::write(root.join("notes.txt"), "mine").unwrap();
        let e = claim(root, "b", &[], false).err().unwrap();
        assert!(e.to_string().contains("another experiment"), "{e}");
        let o = claim(root, "b", &[], true).unwrap();
        assert!(!root.join("privacy.csv").exists() && !root.join("parts/a000.csv").exists());
        assert_eq!(
            fs::read_to_string(root.join("parts/notes.txt")).unwrap(),
            "mine"
        );
        assert_eq!(fs::read_to_string(root.join("notes.txt")).unwrap(), "mine");
        assert!(!o.owns("parts"));
    }

    #[test]
    fn foreign_files_in_the_way_are_refused_and_prune_removes_only_stale_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("trace.csv"), "someone's").unwrap();
        let planned = vec!["trace.csv".to_string()];
        let e = claim(root, "a", &planned, false).err().unwrap();
        assert!(
            e.to_string().contains("trace.csv, which fbo did not write"),
            "{e}"
        );
        {
            let o = claim(root, "a", &planned, true).unwrap();
            o.write("trace.csv", b"t\n").unwrap();
            o.write("server.csv", b"s\n").unwrap();
        }
        // The same experiment again, now without a server: server.csv is stale.
        let o = claim(root, "a", &planned, false).unwrap();
        o.write("trace.csv", b"t2\n").unwrap();
        o.prune().unwrap();
        assert!(!root.join("server.csv").exists());
        assert_eq!(fs::read_to_string(root.join("trace.csv")).unwrap(), "t2\n");
    }

    #[test]
    fn a_refused_claim_on_a_new_folder_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("new");
        let o = claim(&root, "a", &[], false).unwrap();
        drop(o);
        // A claim refused because of another experiment keeps the folder (it existed).
        assert!(claim(&root, "b", &[], false).is_err());
        assert!(root.join(MANIFEST).exists());
    }
}
