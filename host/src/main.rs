//! The `spork` command line.

mod cli;

fn main() -> std::process::ExitCode {
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
