use std::process::ExitCode;

fn main() -> ExitCode {
    floe::run::main()
}
