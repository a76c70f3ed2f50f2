use clap::Parser;

unsafe extern "C" {
    fn openblas_set_num_threads(n: i32);
}

fn main() {
    // Runs are parallel already; BLAS threads on top of them only oversubscribe the cores
    // (the matrices are at most a few hundred wide).
    unsafe { openblas_set_num_threads(1) };
    let cli = fbo::cli::Cli::parse();
    if let Err(e) = fbo::cli::dispatch(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
