//! The `spork` command line.

mod cli;

fn main() -> std::process::ExitCode {
    // A kernel process the server started from this same binary (repository::isolate): before
    // the command line, which it does not have.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(spork::repository::isolate::SUBCOMMAND) {
        let code = spork::repository::isolate::child::main(&args[1..]);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    match cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", chain(&e));
            std::process::ExitCode::from(2)
        }
    }
}

/// The error and its causes, each cause shown once: many errors already quote their cause in their
/// own message ("cannot read f: No such file"), and the chain would repeat it.
fn chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}
