fn main() -> std::process::ExitCode {
    kanalyze::main()
}
