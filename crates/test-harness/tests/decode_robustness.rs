//! Damaged real dumps: every failure is a typed error, never a panic, and
//! never an unbounded allocation.

use kmir::Problem;
use test_harness::{CrateSpec, extract};

fn real_dump_bytes() -> Vec<u8> {
    let out = extract(&[CrateSpec::lib("extract/lockapi.rs")]);
    std::fs::read(&out.dump_paths()[0]).unwrap()
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn every_truncation_is_reported_as_empty_or_truncated() {
    let bytes = real_dump_bytes();
    assert!(kmir::decode(&bytes).is_ok());
    for len in 0..bytes.len() {
        match kmir::decode(&bytes[..len]) {
            Err(Problem::Empty) => assert_eq!(len, 0),
            // The magic is a prefix of every dump, so a cut-off one is
            // never "not a dump".
            Err(Problem::TruncatedPrefix { actual }) => {
                assert!(len > 0 && len < kmir::codec::PREFIX_LEN, "length {len}");
                assert_eq!(actual, len as u64);
            }
            Err(Problem::Truncated { expected, actual }) => {
                assert!(len >= kmir::codec::PREFIX_LEN, "length {len}");
                assert_eq!(actual, len as u64);
                assert!(expected > actual);
            }
            other => panic!("truncated to {len}: {other:?}"),
        }
    }
}

#[test]
fn bit_flips_are_caught_by_the_checksum_or_the_header_checks() {
    let bytes = real_dump_bytes();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let mut damaged = bytes.clone();
        let bit = (rng.next() % (damaged.len() as u64 * 8)) as usize;
        damaged[bit / 8] ^= 1 << (bit % 8);
        match kmir::decode(&damaged) {
            Err(
                Problem::NotADump
                | Problem::TruncatedPrefix { .. }
                | Problem::Version { .. }
                | Problem::Truncated { .. }
                | Problem::Corrupt { .. }
                | Problem::Checksum { .. },
            ) => {}
            other => panic!("flip of bit {bit}: {other:?}"),
        }
    }
}

#[test]
fn payload_decoder_survives_flips_without_the_checksum() {
    // What a crafted file with a matching checksum could do: feed damaged
    // payloads to the decoder itself. It may succeed (a flipped constant) or
    // fail, but must not panic; `decode` then validates cross references.
    let bytes = real_dump_bytes();
    let payload = &bytes[24..];
    let mut rng = Rng(42);
    for round in 0..3000 {
        let mut damaged = payload.to_vec();
        for _ in 0..(1 + round % 4) {
            let i = (rng.next() % damaged.len() as u64) as usize;
            damaged[i] = rng.next() as u8;
        }
        if let Ok(dump) = kmir::decode_payload(&damaged) {
            let _ = kmir::validate(&dump);
        }
    }
}

#[test]
fn huge_length_prefix_is_rejected_without_allocating() {
    // A string length of 2^60 right at the start of the payload.
    let mut payload = vec![0xFDu8];
    payload.extend_from_slice(&(1u64 << 60).to_le_bytes());
    payload.extend_from_slice(&[0u8; 64]);
    match kmir::decode_payload(&payload) {
        Err(Problem::Corrupt { offset, reason }) => {
            assert_eq!(offset, 9, "{reason}");
            assert!(reason.contains("claims more data"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// bincode's varint marker for a `u128` where a length (a `u64`) is read:
/// its own text is `InvalidIntegerType { expected: U64, found: U128 }`.
#[test]
fn u128_length_marker_is_worded() {
    let mut payload = vec![0xFEu8];
    payload.extend_from_slice(&[1u8; 16]);
    match kmir::decode_payload(&payload) {
        Err(Problem::Corrupt { offset, reason }) => {
            assert_eq!(offset, 1, "{reason}");
            assert_eq!(
                reason,
                "an integer is encoded as a 128-bit unsigned integer, where a 64-bit unsigned \
                 integer was expected"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_format_version_is_named() {
    let mut bytes = real_dump_bytes();
    let other = kmir::FORMAT_VERSION + 1;
    bytes[8..12].copy_from_slice(&other.to_le_bytes());
    assert_eq!(
        kmir::decode(&bytes).unwrap_err(),
        Problem::Version {
            found: other,
            supported: kmir::FORMAT_VERSION
        }
    );
    let msg = kmir::LoadError::Bad {
        path: "x/lockapi-1.kmir".into(),
        problem: Problem::Version {
            found: 7,
            supported: 1,
        },
    }
    .to_string();
    assert_eq!(
        msg,
        "`x/lockapi-1.kmir`: written by dump format version 7, but this kanalyze reads version 1; re-extract the crate with a matching kextract"
    );
}
