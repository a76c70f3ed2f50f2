use clap::Parser;

fn main() {
    quiet_on_closed_stdout();
    let cli = fbo::cli::Cli::parse();
    if let Err(e) = fbo::cli::dispatch(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}

/// `fbo validate SPEC | head` closes fbo's stdout early. SIGPIPE stays ignored in fbo (the
/// commands it runs need their pipes' errors as errors), so a print then panics; that one
/// panic means the reader has all it wanted, and fbo exits quietly, as other Unix tools do.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}
