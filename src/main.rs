use clap::Parser;
use std::io::Write;

fn main() {
    quiet_on_closed_streams();
    let cli = fbo::cli::Cli::parse();
    if let Err(e) = fbo::cli::dispatch(cli) {
        // Written, not eprintln!'d: with stderr closed (`fbo validate BAD 2>&1 | head -c 10`)
        // the message is lost but the exit status still says what went wrong.
        let _ = writeln!(std::io::stderr(), "error: {e}");
        std::process::exit(e.exit_code());
    }
}

/// `fbo validate SPEC | head` closes fbo's stdout early. SIGPIPE stays ignored in fbo (the
/// commands it runs need their pipes' errors as errors), so a print then panics. A closed
/// stream is never a crash: a closed stdout means the reader has all it wanted (exit 0, as
/// other Unix tools end); a closed stderr leaves nothing to say anything on, and fbo ends as a
/// process stopped by SIGPIPE reports it (141). Finished units are saved either way.
fn quiet_on_closed_streams() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            if msg.starts_with("failed printing to stdout") {
                std::process::exit(0);
            }
            if msg.starts_with("failed printing to stderr") {
                std::process::exit(141);
            }
        }
        default(info);
    }));
}
