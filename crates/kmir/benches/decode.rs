//! Wire-format benchmark over real dumps: bincode 2 derive mode (what `kmir`
//! uses) against bincode 2 serde mode, decoding and encoding every dump of a
//! directory on one thread, plus the full `kmir::decode` (prefix, CRC-32,
//! bounded decode, `validate`).
//!
//! ```text
//! cargo bench -p kmir --features serde --bench decode -- --warm-up-time 1 --measurement-time 5
//! ```
//!
//! The dumps come from `KMIR_BENCH_DIR`, by default `target/corpus-kmir` under
//! the workspace root (see `docs/performance.md` for how to produce them).
//! Without dumps the benchmark says so and measures nothing.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use kmir::CrateDump;

const MB: f64 = 1e6;

/// The dumps of the benchmark directory, loaded once.
struct Corpus {
    dir: PathBuf,
    /// Whole files (prefix + payload).
    files: Vec<Vec<u8>>,
    /// The decoded dumps, for the encoding benchmarks.
    dumps: Vec<CrateDump>,
    file_bytes: u64,
    payload_bytes: u64,
    /// File name and size of the largest dump.
    largest: (String, u64),
}

fn bench_dir() -> PathBuf {
    match std::env::var_os("KMIR_BENCH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/corpus-kmir"),
    }
}

fn load() -> Option<Corpus> {
    let dir = bench_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "kmir decode benchmark: no dump directory `{}`; set KMIR_BENCH_DIR or produce the corpus dumps \
             (docs/performance.md, \"Dump wire format\"). Nothing measured.",
            dir.display()
        );
        return None;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == kmir::EXTENSION))
        .collect();
    paths.sort();
    if paths.is_empty() {
        eprintln!(
            "kmir decode benchmark: no `.kmir` file in `{}`. Nothing measured.",
            dir.display()
        );
        return None;
    }
    let mut corpus = Corpus {
        dir,
        files: Vec::new(),
        dumps: Vec::new(),
        file_bytes: 0,
        payload_bytes: 0,
        largest: (String::new(), 0),
    };
    for path in &paths {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let dump = match kmir::decode(&bytes) {
            Ok(dump) => dump,
            Err(e) => {
                eprintln!(
                    "kmir decode benchmark: `{}`: {e}\n(re-extract the corpus with the current kextract, \
                     see docs/performance.md). Nothing measured.",
                    path.display()
                );
                return None;
            }
        };
        let size = bytes.len() as u64;
        corpus.file_bytes += size;
        corpus.payload_bytes += size - kmir::codec::PREFIX_LEN as u64;
        if size > corpus.largest.1 {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            corpus.largest = (name, size);
        }
        corpus.files.push(bytes);
        corpus.dumps.push(dump);
    }
    Some(corpus)
}

fn payload(file: &[u8]) -> &[u8] {
    &file[kmir::codec::PREFIX_LEN..]
}

fn serde_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Decodes `payload` with a bincode allocation limit of `LIMIT` bytes.
fn fits<const LIMIT: usize>(payload: &[u8]) -> bool {
    let cfg = bincode::config::standard().with_limit::<LIMIT>();
    bincode::decode_from_slice::<CrateDump, _>(payload, cfg).is_ok()
}

/// The smallest power-of-two bincode limit (in MiB) that decodes `payload`.
fn smallest_limit_mib(payload: &[u8]) -> Option<usize> {
    const MIB: usize = 1 << 20;
    macro_rules! try_limits {
        ($($mib:literal)*) => {
            $(if fits::<{ $mib * MIB }>(payload) { return Some($mib); })*
        };
    }
    try_limits!(1 2 4 8 16 32 64 128 256 512 1024 2048);
    None
}

/// Facts printed once before the measurements: sizes, format equivalence,
/// and the headroom of the decoding bound for the largest dump.
fn report(c: &Corpus) {
    eprintln!(
        "kmir decode benchmark: {} dumps in `{}`, {:.1} MB of files, {:.1} MB of payload; largest `{}` ({:.2} MB)",
        c.files.len(),
        c.dir.display(),
        c.file_bytes as f64 / MB,
        c.payload_bytes as f64 / MB,
        c.largest.0,
        c.largest.1 as f64 / MB,
    );

    // Every body decoded alone equals the eagerly decoded one.
    let mut bodies = 0usize;
    for (file, dump) in c.files.iter().zip(&c.dumps) {
        let lazy =
            kmir::decode_lazy(file.clone()).expect("a dump that decodes eagerly decodes lazily");
        for (i, inst) in dump.instances.iter().enumerate() {
            let alone = lazy.bodies.decode(i).expect("decodes");
            assert_eq!(alone.as_ref(), inst.body.as_deref(), "{}", inst.name);
            bodies += usize::from(alone.is_some());
        }
    }
    eprintln!(
        "  lazy decoding: {bodies} bodies decoded alone, each equal to the eagerly decoded one"
    );

    // Are the two modes' encodings byte-identical? Then the serde decoder
    // can be measured on the very same payloads.
    let mut identical = 0;
    for (file, dump) in c.files.iter().zip(&c.dumps) {
        let serde_bytes = bincode::serde::encode_to_vec(dump, serde_config()).unwrap();
        if serde_bytes == payload(file) {
            identical += 1;
        }
    }
    eprintln!(
        "serde-mode encoding byte-identical to derive mode for {identical} of {} dumps",
        c.files.len()
    );

    let largest = c
        .files
        .iter()
        .max_by_key(|f| f.len())
        .map(|f| payload(f))
        .unwrap();
    const MIB: usize = 1 << 20;
    let needed = largest.len().saturating_mul(4).saturating_add(64 * MIB);
    let bucket = [128, 512, 2048, 8192]
        .into_iter()
        .find(|b| needed <= b * MIB)
        .unwrap_or(8192);
    let t = Instant::now();
    kmir::decode_payload(largest).expect("the largest dump decodes within its bucket");
    let took = t.elapsed();
    eprintln!(
        "decoding bound: largest payload {} bytes, 4x+64 MiB = {:.1} MiB -> bucket {bucket} MiB; \
         decode_payload succeeds ({:.1} ms); smallest power-of-two limit that decodes it: {}",
        largest.len(),
        needed as f64 / MIB as f64,
        took.as_secs_f64() * 1e3,
        smallest_limit_mib(largest).map_or("> 2048 MiB".to_string(), |m| format!("{m} MiB")),
    );
}

/// `kmir::codec`'s decoding reader plus bincode's `peek_read`/`consume` fast
/// path (which `SliceReader` has and the codec's reader lacks), to measure
/// what adding them to the codec would gain.
struct PeekingReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl bincode::de::read::Reader for PeekingReader<'_> {
    fn read(&mut self, bytes: &mut [u8]) -> Result<(), bincode::error::DecodeError> {
        let remaining = self.data.len() - self.pos;
        if bytes.len() > remaining {
            return Err(bincode::error::DecodeError::UnexpectedEnd {
                additional: bytes.len() - remaining,
            });
        }
        let end = self.pos + bytes.len();
        bytes.copy_from_slice(&self.data[self.pos..end]);
        self.pos = end;
        Ok(())
    }

    fn peek_read(&mut self, n: usize) -> Option<&[u8]> {
        self.data.get(self.pos..self.pos.checked_add(n)?)
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.data.len());
    }
}

/// The limit `kmir::decode_payload` uses for payloads under 16 MiB (all of
/// the corpus).
const LIMIT_128_MIB: usize = 128 << 20;

/// Derive and serde decoding passes over the whole corpus, alternated, so
/// that both see the same machine load; the minimum of each is the least
/// disturbed pass. A cross-check of criterion's numbers on a shared machine.
fn interleaved(payloads: &[&[u8]], rounds: usize) {
    let mut derive = Vec::new();
    let mut serde = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        for p in payloads {
            let (dump, _): (CrateDump, usize) =
                bincode::decode_from_slice(black_box(p), serde_config()).unwrap();
            black_box(dump);
        }
        derive.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for p in payloads {
            let (dump, _): (CrateDump, usize) =
                bincode::serde::decode_from_slice(black_box(p), serde_config()).unwrap();
            black_box(dump);
        }
        serde.push(t.elapsed().as_secs_f64());
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let bytes: usize = payloads.iter().map(|p| p.len()).sum();
    eprintln!(
        "interleaved decode, min of {rounds} passes: derive {:.0} ms ({:.0} MB/s), serde {:.0} ms ({:.0} MB/s), serde/derive time {:.2}",
        min(&derive) * 1e3,
        bytes as f64 / MB / min(&derive),
        min(&serde) * 1e3,
        bytes as f64 / MB / min(&serde),
        min(&serde) / min(&derive),
    );
}

fn benches(c: &mut Criterion) {
    let Some(corpus) = load() else { return };
    report(&corpus);
    let payloads: Vec<&[u8]> = corpus.files.iter().map(|f| payload(f)).collect();
    let limited = || serde_config().with_limit::<LIMIT_128_MIB>();
    interleaved(&payloads, 7);

    let mut g = c.benchmark_group("decode");
    g.sample_size(10);
    // One pass over the corpus takes about a second: same iteration count per sample.
    g.sampling_mode(SamplingMode::Flat);
    g.throughput(Throughput::Bytes(corpus.payload_bytes));
    // The two wire modes, same reader (bincode's slice reader), no limit.
    g.bench_function("derive/bincode::decode_from_slice", |b| {
        b.iter(|| {
            for p in &payloads {
                let (dump, _): (CrateDump, usize) =
                    bincode::decode_from_slice(black_box(p), serde_config()).unwrap();
                black_box(dump);
            }
        })
    });
    g.bench_function("serde/bincode::serde::decode_from_slice", |b| {
        b.iter(|| {
            for p in &payloads {
                let (dump, _): (CrateDump, usize) =
                    bincode::serde::decode_from_slice(black_box(p), serde_config()).unwrap();
                black_box(dump);
            }
        })
    });
    // The same with the allocation limit kmir uses.
    g.bench_function("derive/decode_from_slice+limit", |b| {
        b.iter(|| {
            for p in &payloads {
                let (dump, _): (CrateDump, usize) =
                    bincode::decode_from_slice(black_box(p), limited()).unwrap();
                black_box(dump);
            }
        })
    });
    g.bench_function("serde/serde::decode_from_slice+limit", |b| {
        b.iter(|| {
            for p in &payloads {
                let (dump, _): (CrateDump, usize) =
                    bincode::serde::decode_from_slice(black_box(p), limited()).unwrap();
                black_box(dump);
            }
        })
    });
    // What kmir actually runs: limit + offset-tracking reader.
    g.bench_function("derive/kmir::decode_payload", |b| {
        b.iter(|| {
            for p in &payloads {
                black_box(kmir::decode_payload(black_box(p)).unwrap());
            }
        })
    });
    g.bench_function("derive/tracking_reader_with_peek+limit", |b| {
        b.iter(|| {
            for p in &payloads {
                let mut reader = PeekingReader {
                    data: black_box(p),
                    pos: 0,
                };
                let dump: CrateDump = bincode::decode_from_reader(&mut reader, limited()).unwrap();
                assert_eq!(reader.pos, p.len());
                black_box(dump);
            }
        })
    });
    g.throughput(Throughput::Bytes(corpus.file_bytes));
    g.bench_function("full/kmir::decode", |b| {
        b.iter(|| {
            for f in &corpus.files {
                black_box(kmir::decode(black_box(f)).unwrap());
            }
        })
    });
    // Bodies on demand (docs/performance.md, "Bodies decoded on demand"):
    // the load (every body decoded, checked and dropped; the file's bytes
    // copied first, as `decode_lazy` takes them by value), then one pass
    // decoding every body alone, as the analyser does per use.
    g.bench_function("lazy/copy of the files", |b| {
        b.iter(|| {
            for f in &corpus.files {
                black_box(f.clone());
            }
        })
    });
    g.bench_function("lazy/kmir::decode_lazy (with the copy)", |b| {
        b.iter(|| {
            for f in &corpus.files {
                black_box(kmir::decode_lazy(black_box(f.clone())).unwrap());
            }
        })
    });
    let lazy: Vec<kmir::LazyDump> = corpus
        .files
        .iter()
        .map(|f| kmir::decode_lazy(f.clone()).unwrap())
        .collect();
    g.bench_function("lazy/every body decoded alone", |b| {
        b.iter(|| {
            for l in &lazy {
                for i in 0..l.bodies.len() {
                    black_box(l.bodies.decode(i).unwrap());
                }
            }
        })
    });
    g.throughput(Throughput::Bytes(corpus.payload_bytes));
    g.bench_function("parts/crc32", |b| {
        b.iter(|| {
            for p in &payloads {
                black_box(crc32fast::hash(black_box(p)));
            }
        })
    });
    g.bench_function("parts/validate", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                kmir::validate(black_box(d)).unwrap();
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("encode");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.throughput(Throughput::Bytes(corpus.payload_bytes));
    // The two wire modes, same writer (a growing Vec, as kmir::encode).
    g.bench_function("derive/encode_into_std_write", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                let mut out = Vec::new();
                bincode::encode_into_std_write(black_box(d), &mut out, serde_config()).unwrap();
                black_box(out);
            }
        })
    });
    g.bench_function("serde/serde::encode_into_std_write", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                let mut out = Vec::new();
                bincode::serde::encode_into_std_write(black_box(d), &mut out, serde_config())
                    .unwrap();
                black_box(out);
            }
        })
    });
    // bincode's `encode_to_vec` differs between the modes: derive mode
    // first runs a sizing pass, serde mode grows the Vec.
    g.bench_function("derive/bincode::encode_to_vec", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                black_box(bincode::encode_to_vec(black_box(d), serde_config()).unwrap());
            }
        })
    });
    g.bench_function("serde/bincode::serde::encode_to_vec", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                black_box(bincode::serde::encode_to_vec(black_box(d), serde_config()).unwrap());
            }
        })
    });
    g.bench_function("full/kmir::encode", |b| {
        b.iter(|| {
            for d in &corpus.dumps {
                black_box(kmir::encode(black_box(d)));
            }
        })
    });
    g.finish();
}

criterion_group!(decode, benches);
criterion_main!(decode);
