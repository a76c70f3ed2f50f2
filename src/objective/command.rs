//! Command objectives: each evaluation runs the user's program (argv executed directly,
//! never through a shell) and reads its metric. The protocol (docs/commands.md): the
//! request as JSON on stdin and as environment variables, one JSON object on the last line
//! of stdout. Evaluations reported by hand (`fbo ask` / `fbo tell`) use the same objective
//! without a command.

use crate::objective::journal::Request;
use crate::objective::{Codec, Point};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a failed evaluation does to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Stop the run with the error (the default); finished evaluations stay in the journal.
    Stop,
    /// Record the evaluation as failed and go on: the agent does not observe the point.
    Skip,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CommandSettings {
    /// argv; None for an objective evaluated by hand (`kind = "external"`).
    pub argv: Option<Vec<String>>,
    /// Where the command runs (default: the spec's folder).
    pub workdir: PathBuf,
    /// +1 when the metric is maximised, -1 when minimised.
    pub sign: f64,
    /// The metric's name, for axis labels.
    pub metric_name: String,
    pub timeout_s: f64,
    /// Further attempts after a failure before it counts.
    pub retries: usize,
    /// Evaluations running at once, over all runs and agents.
    pub concurrency: usize,
    pub on_failure: OnFailure,
}

/// Why an evaluation has no value.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The program could not be started at all (it fails every evaluation alike).
    CannotStart(String),
    /// This evaluation failed (exit status, timeout, output), after its retries.
    Failed(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Failed(s)
    }
}

/// Runs the command with at most `concurrency` evaluations at once.
pub struct CommandRunner {
    pub settings: CommandSettings,
    codec: Codec,
    running: Mutex<usize>,
    free: Condvar,
}

/// How many of the command's last stderr lines an error quotes.
const STDERR_LINES: usize = 12;

/// The environment variable of a hyperparameter: FBO_PARAM_ and its name in capitals.
pub fn param_var(name: &str) -> String {
    format!("FBO_PARAM_{}", name.to_ascii_uppercase())
}

/// The program argv[0] names: a path with a slash ("./train.py") is the one in `workdir`,
/// said explicitly, as Command leaves it to the platform; a bare name is looked up on PATH
/// when it starts.
pub fn program_path(argv0: &str, workdir: &std::path::Path) -> PathBuf {
    if argv0.contains('/') {
        workdir.join(argv0)
    } else {
        PathBuf::from(argv0)
    }
}

/// The request as the command reads it on stdin.
pub fn request_json(codec: &Codec, req: &Request, point: &Point, raw: &[f64]) -> String {
    let params = codec.json(raw);
    serde_json::json!({
        "agent": req.agent,
        "run": req.run,
        "iteration": req.iteration,
        "scope": req.scope,
        "params": params,
        "unit": point.x,
    })
    .to_string()
}

/// The metric and optional cost from the command's stdout: its last non-empty line must be
/// a JSON object with a finite number `metric`.
pub fn parse_output(stdout: &str) -> std::result::Result<(f64, Option<f64>), String> {
    let Some(last) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        return Err(
            "printed nothing on stdout; expected a last line like {\"metric\": 0.83}".into(),
        );
    };
    if last == LONG_LINE {
        return Err(format!(
            "its last line of stdout is longer than the {} KiB fbo keeps of a command's output; print the result on a short line of its own, last, like {{\"metric\": 0.83}}",
            KEEP_BYTES / 1024
        ));
    }
    let shown: String = last.chars().take(200).collect();
    let v: serde_json::Value = serde_json::from_str(last.trim()).map_err(|_| {
        format!("its last line of stdout is not JSON: {shown:?}; expected {{\"metric\": <number>}}")
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("its last line of stdout is not a JSON object: {shown:?}"))?;
    // JSON parsers keep the last of two equal keys; which value the program meant is not
    // for fbo to guess.
    let Keys(keys) = serde_json::from_str(last.trim()).map_err(|e| e.to_string())?;
    for k in ["metric", "cost_s"] {
        if keys.iter().filter(|n| *n == k).count() > 1 {
            return Err(format!(
                "its output {shown:?} gives \"{k}\" more than once; print it once"
            ));
        }
    }
    let metric = match obj.get("metric") {
        None => return Err(format!("its output {shown:?} has no \"metric\"")),
        Some(m) => m
            .as_f64()
            .ok_or_else(|| format!("its \"metric\" is not a number: {m}"))?,
    };
    if !metric.is_finite() {
        return Err(format!("its \"metric\" is not finite: {metric}"));
    }
    let cost = match obj.get("cost_s") {
        None => None,
        Some(c) => match c.as_f64() {
            Some(c) if c.is_finite() && c >= 0.0 => Some(c),
            _ => return Err(format!("its \"cost_s\" is not a number >= 0: {c}")),
        },
    };
    Ok((metric, cost))
}

/// The top-level keys of a JSON object in the order written, repeats kept.
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// The last `n` lines of `text` for an error message, each cut to LINE_CHARS characters.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| {
            let count = l.chars().count();
            if count > LINE_CHARS {
                let kept: String = l.chars().skip(count - LINE_CHARS).collect();
                format!("  | ...{kept}")
            } else {
                format!("  | {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The characters of one stderr line an error quotes (its end, where messages conclude).
const LINE_CHARS: usize = 300;

/// Bytes kept of each of a command's output streams: its end, where the metric line and the
/// last error are. A program that prints without end costs this much memory, not all it
/// printed.
const KEEP_BYTES: usize = 64 * 1024;

/// Stands for a last line longer than KEEP_BYTES, which fbo could not keep whole; readable
/// where a stderr tail is quoted, and recognised when stdout's last line is parsed.
const LONG_LINE: &str = "[fbo: a line longer than the 64 KiB kept of this stream]";

/// The end of one output stream, read on a thread of its own.
struct Tail {
    buf: std::sync::Arc<Mutex<(Vec<u8>, bool)>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Tail {
    fn read(mut r: Box<dyn Read + Send>) -> Tail {
        let buf = std::sync::Arc::new(Mutex::new((Vec::new(), false)));
        let (tx, done) = std::sync::mpsc::channel();
        let shared = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut b = shared.lock().expect("output tail");
                        b.0.extend_from_slice(&chunk[..n]);
                        if b.0.len() > 2 * KEEP_BYTES {
                            let cut = b.0.len() - KEEP_BYTES;
                            b.0.drain(..cut);
                            b.1 = true;
                        }
                    }
                }
            }
            let _ = tx.send(());
        });
        Tail { buf, done }
    }

    /// What was read, waiting for the end of the stream until `deadline` at most. Where
    /// more than KEEP_BYTES came, the kept end starts on a line of its own; if no whole line
    /// is left (one line longer than what is kept), a note saying so stands in its place.
    fn finish(self, deadline: Instant) -> String {
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let b = self.buf.lock().expect("output tail");
        let start = b.0.len().saturating_sub(KEEP_BYTES);
        let text = String::from_utf8_lossy(&b.0[start..]).into_owned();
        if b.1 || start > 0 {
            // The first line may be cut: the kept end starts on a line of its own.
            let rest = text.find('\n').map_or("", |i| &text[i + 1..]);
            if rest.trim().is_empty() {
                format!("{LONG_LINE}\n")
            } else {
                rest.to_string()
            }
        } else {
            text
        }
    }
}

/// Whether process `pid` (our child) has ended, without reaping it.
fn exited(pid: i32) -> std::io::Result<bool> {
    // SAFETY: waitid on our own child with WNOWAIT only looks; `info` is zeroed plain data.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(info.si_pid() != 0)
    }
}

/// Forks, into the program's process group and before it starts, a watchdog that kills the
/// group when fbo is gone: it waits for the end of fbo's pipe (`watch_r`'s write end, which
/// only fbo holds). The program also gets the parent-death signal.
fn arm_watchdog(cmd: &mut Command, watch_r: i32) {
    // SAFETY: between fork and exec only async-signal-safe calls are made (prctl, setpgid,
    // fork, close, read, kill, _exit); the watchdog never returns into Rust code.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::setpgid(0, 0);
            if libc::fork() == 0 {
                // The watchdog holds nothing but the read end of fbo's pipe: no stdio of
                // the program's, and none of the pipes of other evaluations starting at
                // this moment (whose ends would otherwise stay open in it).
                let fd = watch_r as libc::c_uint;
                let closed = (fd == 0 || libc::syscall(libc::SYS_close_range, 0, fd - 1, 0) == 0)
                    && libc::syscall(libc::SYS_close_range, fd + 1, libc::c_uint::MAX, 0) == 0;
                if !closed {
                    // A kernel before 5.9: one by one, up to the limit of open files.
                    let mut lim: libc::rlimit = std::mem::zeroed();
                    let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                        (lim.rlim_cur as i32).clamp(3, 1 << 16)
                    } else {
                        1 << 16
                    };
                    for fd in 0..max {
                        if fd != watch_r {
                            libc::close(fd);
                        }
                    }
                }
                let mut b = 0u8;
                loop {
                    let n = libc::read(watch_r, (&mut b as *mut u8).cast(), 1);
                    if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                        break;
                    }
                }
                libc::kill(0, libc::SIGKILL);
                libc::_exit(0);
            }
            Ok(())
        });
    }
}

/// Polls until the program `pid` has exited (true) or `timeout` since `start` has passed
/// (false), without reaping it: its process group id stays its own until `wait`.
fn wait_for_exit(
    pid: i32,
    start: Instant,
    timeout: Duration,
) -> std::result::Result<bool, Failure> {
    let mut pause = Duration::from_micros(50);
    Ok(loop {
        match exited(pid) {
            Ok(true) => break true,
            Ok(false) if start.elapsed() >= timeout => break false,
            Ok(false) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("waiting for the command failed: {e}").into()),
        }
    })
}

/// A pipe whose ends are closed on exec (the program inherits neither): (read, write).
fn watch_pipe() -> std::io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two descriptors of `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// fbo's end of a watchdog's pipe: closing it (this attempt ends, or fbo dies) tells the
/// watchdog to kill its group.
struct WatchEnd(i32);

impl Drop for WatchEnd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// SIGKILL to the process group `pgid` (a command's: it leads its own group).
fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negated process-group id of a child we have not reaped.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// The process groups of the commands running now, for an interrupt to stop.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A command's process group, listed while it runs.
struct Running(i32);

impl Running {
    fn register(pgid: i32) -> Running {
        RUNNING.lock().expect("running commands").push(pgid);
        Running(pgid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .expect("running commands")
            .retain(|&p| p != self.0);
    }
}

/// Stops every command evaluation running now, with whatever it started: fbo's interrupt
/// handler calls it before fbo exits, so no evaluation outlives fbo.
pub fn kill_running() {
    // A poisoned lock still holds the list: an interrupt must stop them all the same.
    let list = match RUNNING.lock() {
        Ok(l) => l.clone(),
        Err(p) => p.into_inner().clone(),
    };
    for pgid in list {
        kill_group(pgid);
    }
}

fn status_text(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "an unknown exit status".into(),
    }
}

impl CommandRunner {
    pub fn new(settings: CommandSettings, codec: Codec) -> Self {
        CommandRunner {
            settings,
            codec,
            running: Mutex::new(0),
            free: Condvar::new(),
        }
    }

    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// One evaluation, retried as the settings say: the metric and the seconds it cost (the
    /// command's own `cost_s` if it reports one, else the wall time of the successful
    /// attempt), or the error of the last attempt.
    pub fn evaluate(
        &self,
        req: &Request,
        point: &Point,
        raw: &[f64],
    ) -> std::result::Result<(f64, f64), Failure> {
        let argv = self
            .settings
            .argv
            .as_ref()
            .expect("command objectives have argv");
        let mut last = String::new();
        for attempt in 0..=self.settings.retries {
            let _slot = self.acquire();
            match self.attempt(argv, req, point, raw) {
                Ok(v) => return Ok(v),
                // A program that cannot be started fails every evaluation alike: no retry,
                // and never skipped as one failed point.
                Err(Failure::CannotStart(e)) => return Err(Failure::CannotStart(e)),
                Err(Failure::Failed(e)) => {
                    last = if self.settings.retries > 0 {
                        format!(
                            "attempt {} of {}: {e}",
                            attempt + 1,
                            self.settings.retries + 1
                        )
                    } else {
                        e
                    }
                }
            }
        }
        Err(Failure::Failed(last))
    }

    fn acquire(&self) -> Slot<'_> {
        let mut n = self.running.lock().expect("slots");
        while *n >= self.settings.concurrency {
            n = self.free.wait(n).expect("slots");
        }
        *n += 1;
        Slot(self)
    }

    fn attempt(
        &self,
        argv: &[String],
        req: &Request,
        point: &Point,
        raw: &[f64],
    ) -> std::result::Result<(f64, f64), Failure> {
        let start = Instant::now();
        let mut cmd = Command::new(program_path(&argv[0], &self.settings.workdir));
        cmd.args(&argv[1..])
            .current_dir(&self.settings.workdir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("FBO_AGENT", req.agent.to_string())
            .env("FBO_RUN", req.run.to_string())
            .env("FBO_ITERATION", req.iteration.to_string())
            .env("FBO_SCOPE", &req.scope)
            // Its own process group, so a timeout stops whatever it started too.
            .process_group(0);
        // If fbo itself is killed (kill -9, where no handler runs), the whole group must go
        // too, including what the program started. The program gets the parent-death signal;
        // a watchdog forked into its group waits for the end of a pipe only fbo writes to,
        // and when fbo is gone (EOF) kills the group, itself included.
        let (watch_r, watch_w) = watch_pipe()
            .map_err(|e| Failure::CannotStart(format!("could not make a pipe: {e}")))?;
        let _watch = WatchEnd(watch_w);
        arm_watchdog(&mut cmd, watch_r);
        for (k, (n, &v)) in self.codec.names.iter().zip(raw).enumerate() {
            cmd.env(param_var(n), self.codec.show(k, v));
        }
        let spawned = cmd.spawn();
        // fbo keeps only the write end, open while the evaluation runs (`_watch`, dropped at
        // the end of this attempt, after the group is killed).
        // SAFETY: closing the read end we own; the child has its own copy.
        unsafe {
            libc::close(watch_r);
        }
        let mut child = spawned.map_err(|e| {
            Failure::CannotStart(format!(
                "could not start {:?} in {}: {e}",
                argv[0],
                self.settings.workdir.display()
            ))
        })?;
        let pid = child.id() as i32;
        // Registered while it runs, so an interrupt of fbo stops it and its group too.
        let _running = Running::register(pid);
        let input = request_json(&self.codec, req, point, raw);
        let mut stdin = child.stdin.take().expect("piped stdin");
        // A command that does not read its stdin closes the pipe: not an error.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
            let _ = stdin.write_all(b"\n");
        });
        let out = Tail::read(Box::new(child.stdout.take().expect("piped stdout")));
        let err = Tail::read(Box::new(child.stderr.take().expect("piped stderr")));
        let timeout = Duration::from_secs_f64(self.settings.timeout_s);
        let exited = wait_for_exit(pid, start, timeout)?;
        // The program has ended (or its time is up) but is not reaped yet, so its process
        // group id cannot have been reused: whatever it left running in the group (a
        // background child holding stdout open) is stopped with it.
        kill_group(pid);
        let status = child.wait();
        drop(_running);
        let _ = writer.join();
        // What the program wrote is read to its end, unless something that left its group
        // still holds the pipes: then what arrived by the deadline is what it said.
        let grace = Instant::now() + Duration::from_secs(2);
        let stdout = out.finish(grace);
        let stderr = err.finish(grace);
        if !exited {
            return Err(Failure::Failed(format!(
                "timed out after {} s (objective.timeout_s) and was killed with its process group{}",
                self.settings.timeout_s,
                if stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!("; stderr ends with:\n{}", tail(&stderr, STDERR_LINES))
                }
            )));
        }
        let status = status.map_err(|e| format!("waiting for the command failed: {e}"))?;
        let seconds = start.elapsed().as_secs_f64();
        let with_stderr = |msg: String| {
            if stderr.trim().is_empty() {
                format!("{msg}; it wrote nothing on stderr")
            } else {
                format!("{msg}; stderr ends with:\n{}", tail(&stderr, STDERR_LINES))
            }
        };
        if !status.success() {
            return Err(with_stderr(format!("ended with {}", status_text(status))).into());
        }
        match parse_output(&stdout) {
            Ok((metric, cost)) => Ok((metric, cost.unwrap_or(seconds))),
            Err(e) => Err(with_stderr(format!("ended with exit status 0 but {e}")).into()),
        }
    }
}

struct Slot<'a>(&'a CommandRunner);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut n = self.0.running.lock().expect("slots");
        *n -= 1;
        self.0.free.notify_one();
    }
}

/// The message of a failed evaluation: who, where, and why.
pub fn failure_message(codec: &Codec, req: &Request, raw: &[f64], why: &str) -> String {
    format!(
        "command evaluation failed for agent {} at {} ({}, run {}, iteration {}): {why}",
        req.agent,
        codec.describe(raw),
        if req.scope == "init" {
            "initial point".to_string()
        } else {
            req.scope.clone()
        },
        req.run,
        req.iteration
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_refused_not_guessed() {
        assert_eq!(parse_output("{\"metric\": 0.5}\n").unwrap(), (0.5, None));
        let e = parse_output("{\"metric\": 0.5, \"metric\": 0.9}").unwrap_err();
        assert!(e.contains("\"metric\" more than once"), "{e}");
        let e = parse_output("{\"metric\": 0.5, \"cost_s\": 1, \"cost_s\": 2}").unwrap_err();
        assert!(e.contains("\"cost_s\" more than once"), "{e}");
    }

    #[test]
    fn a_last_line_longer_than_what_is_kept_is_named_as_such() {
        // A 10 MB JSON line, then its newline: the kept end holds no whole line.
        let mut out = format!(
            "{{\"metric\": 0.5, \"junk\": \"{}\"}}",
            "x".repeat(10 << 20)
        );
        out.push('\n');
        let tail = Tail::read(Box::new(std::io::Cursor::new(out.into_bytes())));
        let kept = tail.finish(Instant::now() + std::time::Duration::from_secs(10));
        let e = parse_output(&kept).unwrap_err();
        assert!(e.contains("longer than the 64 KiB"), "{e}");
        // A long log line before a short result line is no problem.
        let out = format!("{}\n{{\"metric\": 0.25}}\n", "y".repeat(1 << 20));
        let tail = Tail::read(Box::new(std::io::Cursor::new(out.into_bytes())));
        let kept = tail.finish(Instant::now() + std::time::Duration::from_secs(10));
        assert_eq!(parse_output(&kept).unwrap(), (0.25, None));
    }
}
