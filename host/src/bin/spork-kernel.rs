//! A kernel process: one model's CPU code, run apart from the server that starts it (see
//! `spork::repository::isolate`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(spork::repository::isolate::child::main(&args));
}
