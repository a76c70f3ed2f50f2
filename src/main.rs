use clap::Parser;

fn main() {
    let cli = fbo::cli::Cli::parse();
    if let Err(e) = fbo::cli::dispatch(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
