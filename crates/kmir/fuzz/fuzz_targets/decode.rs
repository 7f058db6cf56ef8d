//! Whole files: prefix, checksum, bounded decode and `validate`. Must return
//! an error, never panic or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kmir::decode(data);
});
