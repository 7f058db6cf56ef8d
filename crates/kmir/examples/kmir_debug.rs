//! Prints a dump with `{:#?}`: the raw model, for debugging the extractor.
fn main() {
    for path in std::env::args_os().skip(1) {
        match kmir::read_file(std::path::Path::new(&path)) {
            Ok(dump) => println!("{dump:#?}"),
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
