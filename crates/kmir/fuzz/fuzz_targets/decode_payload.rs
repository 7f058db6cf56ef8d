//! The bincode payload alone (the checksum in the prefix would reject almost
//! every mutation before the decoder sees it), then `validate` on whatever
//! decodes. Must return an error, never panic or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(dump) = kmir::decode_payload(data) {
        let _ = kmir::validate(&dump);
    }
});
