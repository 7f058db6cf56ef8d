fn main() -> std::process::ExitCode {
    kanalyze::run()
}
