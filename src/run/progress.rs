//! What a user sees while fbo works: a live bar on a terminal (its clock ticking between
//! finished runs), a log line every few seconds when stderr is a file or a pipe, and on
//! Ctrl-C (or SIGTERM) a last line saying what was saved and how to resume.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Seconds between log lines when stderr is not a terminal: 10, or FBO_LOG_SECONDS.
fn log_every() -> Duration {
    let s = std::env::var("FBO_LOG_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(10.0);
    Duration::from_secs_f64(s)
}

/// A bar counting `total` units (runs, points, table cells). Drawn on a terminal with a
/// steady tick; hidden otherwise (a `Ticker` then logs it) or when `quiet`.
pub fn bar(total: u64, quiet: bool, unit: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        let pb = ProgressBar::hidden();
        pb.set_length(total);
        return pb;
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {unit}, ETA {{eta}}"
        ))
        .expect("valid template"),
    );
    pb.enable_steady_tick(Duration::from_millis(500));
    pb
}

/// A thread that calls `tick` every `every` until dropped (then once more with `last`
/// true), and is joined then: what keeps a bar's log or position current.
struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    fn idle() -> Background {
        Background {
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        }
    }

    fn start(every: Duration, mut tick: impl FnMut(bool) + Send + 'static) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(every);
                tick(false);
            }
            tick(true);
        });
        Background {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Prints `bar`'s state every `log_every()` while alive, when stderr is not a terminal and
/// the command is not quiet; stops when dropped.
pub struct Ticker {
    _thread: Background,
}

impl Ticker {
    pub fn start(bar: &ProgressBar, quiet: bool, unit: &'static str) -> Ticker {
        if quiet || std::io::stderr().is_terminal() {
            return Ticker {
                _thread: Background::idle(),
            };
        }
        let bar = bar.clone();
        let started = Instant::now();
        // What was done before (resumed work) says nothing of the pace.
        let pos0 = bar.position();
        let every = log_every();
        let mut last = Instant::now();
        let thread = Background::start(Duration::from_millis(100), move |end| {
            if end || last.elapsed() < every {
                return;
            }
            last = Instant::now();
            let (pos, len) = (bar.position(), bar.length().unwrap_or(0));
            let elapsed = started.elapsed().as_secs_f64();
            let eta = if pos > pos0 && len > pos {
                format!(
                    ", about {} left",
                    clock(elapsed / (pos - pos0) as f64 * (len - pos) as f64)
                )
            } else {
                String::new()
            };
            eprintln!(
                "fbo: {pos}/{len} {unit} done, {} elapsed{eta}",
                clock(elapsed)
            );
        });
        Ticker { _thread: thread }
    }
}

/// Sets a bar's position from `count` every 200 ms while alive (and once more when
/// dropped): progress counted by something other than the bar's owner (a journal's finished
/// evaluations).
pub struct Follow {
    _thread: Background,
}

impl Follow {
    pub fn start(bar: &ProgressBar, count: impl Fn() -> u64 + Send + 'static) -> Follow {
        bar.set_position(count());
        let bar = bar.clone();
        Follow {
            _thread: Background::start(Duration::from_millis(200), move |_| {
                bar.set_position(count())
            }),
        }
    }
}

fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// What an interrupt should report: units saved so far (read from the bar), where, and what
/// they are.
struct Note {
    bar: ProgressBar,
    unit: &'static str,
    folder: PathBuf,
}

static NOTE: OnceLock<Mutex<Option<Note>>> = OnceLock::new();

fn note() -> &'static Mutex<Option<Note>> {
    NOTE.get_or_init(|| Mutex::new(None))
}

/// A stop asked for by a host that cannot let fbo exit the process (Python's Ctrl-C): units
/// check it each iteration and end with `FboError::Interrupted`, keeping what finished.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks every running unit to stop at its next iteration (and no new one to start).
pub fn request_stop(stop: bool) {
    STOP.store(stop, std::sync::atomic::Ordering::SeqCst);
}

/// Err(Interrupted) once a stop was asked for.
pub fn check_stop() -> crate::error::Result<()> {
    match STOP.load(std::sync::atomic::Ordering::Relaxed) {
        true => Err(crate::error::FboError::Interrupted),
        false => Ok(()),
    }
}

/// Installs the Ctrl-C / SIGTERM handler once. Finished units are already on disk (each is
/// written atomically), so the handler only says so and exits with 130.
pub fn install_interrupt_handler() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = ctrlc::set_handler(|| {
            // No evaluation of the user's program outlives fbo.
            crate::objective::command::kill_running();
            let kept = crate::objective::journal::kept();
            let msg = match note().lock().ok().and_then(|n| {
                n.as_ref().map(|n| {
                    // Evaluations are counted from the journal itself, not the bar (which
                    // follows it a moment late).
                    let done = if n.unit == "evaluations" {
                        kept as u64
                    } else {
                        n.bar.position()
                    };
                    format!(
                        "interrupted: {done} of {} {} saved in {}; rerun the same command to resume",
                        n.bar.length().unwrap_or(0),
                        n.unit,
                        n.folder.display()
                    )
                })
            }) {
                Some(m) => m,
                None => "interrupted: what was finished is saved; rerun the same command to resume"
                    .to_string(),
            };
            let msg = if kept > 0 {
                format!(
                    "{msg}\n{kept} finished evaluations are kept in the evaluations journal ({}); the rerun starts none of them again",
                    crate::objective::journal::JOURNAL
                )
            } else {
                msg
            };
            eprintln!("\n{msg}");
            std::process::exit(130);
        });
    });
}

/// While the guard lives, an interrupt reports `bar`'s count of `unit` saved in `folder`.
pub struct InterruptNote;

impl InterruptNote {
    pub fn set(bar: &ProgressBar, unit: &'static str, folder: PathBuf) -> InterruptNote {
        if let Ok(mut n) = note().lock() {
            *n = Some(Note {
                bar: bar.clone(),
                unit,
                folder,
            });
        }
        InterruptNote
    }
}

impl Drop for InterruptNote {
    fn drop(&mut self) {
        if let Ok(mut n) = note().lock() {
            *n = None;
        }
    }
}
