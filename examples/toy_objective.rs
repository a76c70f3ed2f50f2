//! A toy command objective: fbo's Branin (or Forrester) function, computed exactly as the
//! built-in `kind = "function"` objective computes it, behind the command protocol
//! (docs/commands.md). The tests use it to check that a command run makes the built-in
//! objective's queries, and to make a command crash, hang or print garbage on purpose;
//! `fbo bench --command` uses it to measure the protocol's overhead. Also a template for a
//! Rust program tuned by fbo.
//!
//! Environment: FBO_PARAM_<NAME> (set by fbo); TOY_FUNCTION = branin (default) | forrester;
//! TOY_MODE = ok (default) | crash | hang | garbage | nan | flaky (fails on its first try
//! per request, needs TOY_COUNT); TOY_FAIL_AGENT = an agent for which TOY_MODE applies
//! (default: every agent); TOY_SLEEP_MS = milliseconds to sleep first; TOY_COUNT = a file
//! to which each invocation appends a line "scope run agent iteration"; TOY_EVENTS = a file
//! to which it appends "+" when it starts and "-" when it is done.

use fbo::objective::function::Function;
use std::io::{Read, Write};

fn param(name: &str) -> f64 {
    let var = format!("FBO_PARAM_{}", name.to_ascii_uppercase());
    let v = std::env::var(&var).unwrap_or_else(|_| panic!("{var} is not set"));
    v.parse()
        .unwrap_or_else(|_| panic!("{var} = {v:?} is not a number"))
}

fn main() {
    // The request also arrives on stdin; reading it keeps the pipe tidy.
    let mut request = String::new();
    let _ = std::io::stdin().read_to_string(&mut request);
    let mut mode = std::env::var("TOY_MODE").unwrap_or_else(|_| "ok".into());
    let agent = std::env::var("FBO_AGENT").unwrap_or_default();
    if std::env::var("TOY_FAIL_AGENT").is_ok_and(|a| a != agent) {
        mode = "ok".into();
    }
    // TOY_EVENTS: a file to which "+" is appended on starting and "-" on finishing, so a
    // test can replay how many evaluations ran at once.
    let event = |e: &str| {
        if let Ok(path) = std::env::var("TOY_EVENTS") {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("TOY_EVENTS file");
            f.write_all(e.as_bytes()).expect("TOY_EVENTS write");
        }
    };
    event("+");
    if let Some(ms) = std::env::var("TOY_SLEEP_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    event("-");
    let mut first_try = true;
    if let Ok(path) = std::env::var("TOY_COUNT") {
        let line = format!(
            "{} {} {} {}\n",
            std::env::var("FBO_SCOPE").unwrap_or_default(),
            std::env::var("FBO_RUN").unwrap_or_default(),
            std::env::var("FBO_AGENT").unwrap_or_default(),
            std::env::var("FBO_ITERATION").unwrap_or_default(),
        );
        first_try = !std::fs::read_to_string(&path).is_ok_and(|t| t.contains(&line));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("TOY_COUNT file");
        f.write_all(line.as_bytes()).expect("TOY_COUNT write");
    }
    let f = match std::env::var("TOY_FUNCTION").as_deref() {
        Ok("forrester") => Function::Forrester,
        _ => Function::Branin,
    };
    let names: Vec<String> = f.params().into_iter().map(|p| p.name).collect();
    match mode.as_str() {
        "crash" => {
            eprintln!("loading data...");
            eprintln!("error: out of memory in layer 3");
            std::process::exit(3);
        }
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        "garbage" => {
            println!("epoch 1 done");
            println!("accuracy: great");
            return;
        }
        "nan" => {
            println!("{{\"metric\": \"NaN\"}}");
            return;
        }
        "flaky" if first_try => {
            eprintln!("transient failure");
            std::process::exit(1);
        }
        _ => {}
    }
    let x: Vec<f64> = names.iter().map(|n| param(n)).collect();
    let metric = f.value(&x);
    println!("training done");
    println!("{}", serde_json::json!({ "metric": metric }));
}
