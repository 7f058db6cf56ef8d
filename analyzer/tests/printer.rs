//! The printer on a dump built by hand (see `common`), snapshotted.

mod common;

use kanalyze::print::{Options, print_dump};

fn render(options: Options) -> String {
    let dump = common::sample_dump();
    // The sample must be a dump the reader accepts, or the snapshot would
    // show notation for states that cannot occur.
    kmir::validate(&dump).expect("the sample dump is valid");
    let mut out = Vec::new();
    print_dump(&mut out, &dump, None, options).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("the printer writes UTF-8")
}

#[test]
fn prints_the_sample_dump() {
    insta::assert_snapshot!(render(Options::default()));
}

#[test]
fn prints_without_bodies() {
    let text = render(Options { bodies: false });
    assert!(!text.contains("bb0"), "no blocks without bodies");
    insta::assert_snapshot!(text);
}

#[test]
fn round_trips_through_the_codec_before_printing() {
    let dump = common::sample_dump();
    let decoded = kmir::decode(&kmir::encode(&dump)).expect("the sample decodes");
    assert_eq!(decoded, dump);
}
