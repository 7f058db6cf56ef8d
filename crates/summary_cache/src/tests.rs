use super::pack::{self, Entry, Pack};

fn sample() -> Pack {
    Pack {
        symbols: vec!["_RNvCs1_3foo3bar".into(), "_RNvCs1_3foo3baz".into()],
        entries: vec![Entry {
            key: 0x1234_5678_9abc_def0_0fed_cba9_8765_4321,
            ids: vec![1, 0],
            bytes: vec![1, 2, 3, 4, 5],
        }],
    }
}

#[test]
fn a_pack_reads_back() {
    let bytes = pack::encode(&sample()).unwrap();
    assert_eq!(pack::decode(&bytes).unwrap(), sample());
}

#[test]
fn borrowed_entries_are_written_as_owned_ones_are_read() {
    let owned = sample();
    let borrowed = pack::PackRef {
        symbols: owned.symbols.iter().map(String::as_str).collect(),
        entries: owned
            .entries
            .iter()
            .map(|e| pack::EntryRef {
                key: e.key,
                ids: e.ids.clone(),
                bytes: &e.bytes,
            })
            .collect(),
    };
    assert_eq!(
        pack::encode(&borrowed).unwrap(),
        pack::encode(&owned).unwrap()
    );
}

#[test]
fn a_foreign_file_is_refused() {
    let err = pack::decode(b"not a cache at all, just some text in a file").unwrap_err();
    assert_eq!(err, "not a kanalyze summary cache");
    assert_eq!(
        pack::decode(b"").unwrap_err(),
        "not a kanalyze summary cache"
    );
}

#[test]
fn another_format_is_refused() {
    let mut bytes = pack::encode(&sample()).unwrap();
    bytes[16..20].copy_from_slice(&(pack::FORMAT_VERSION + 1).to_le_bytes());
    let err = pack::decode(&bytes).unwrap_err();
    assert!(err.contains("cache format"), "{err}");
}

#[test]
fn corruption_is_refused() {
    let good = pack::encode(&sample()).unwrap();
    // Every single flipped byte of the payload fails the checksum.
    for at in 44..good.len() {
        let mut bytes = good.clone();
        bytes[at] ^= 0x40;
        let err = pack::decode(&bytes).unwrap_err();
        assert!(err.contains("checksum"), "byte {at}: {err}");
    }
    let err = pack::decode(&good[..good.len() - 1]).unwrap_err();
    assert!(err.contains("truncated"), "{err}");
    let mut longer = good.clone();
    longer.push(0);
    assert!(pack::decode(&longer).unwrap_err().contains("truncated"));
}

#[test]
fn a_symbol_out_of_range_is_refused() {
    let mut p = sample();
    p.entries[0].ids.push(7);
    let bytes = pack::encode(&p).unwrap();
    assert!(pack::decode(&bytes).unwrap_err().contains("symbol"));
}

#[test]
fn writes_replace_and_old_packs_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for i in 0..(pack::MAX_PACKS + 3) {
        let path = dir.path().join(format!("{i:032x}.kcache"));
        pack::write(dir.path(), &path, &sample()).unwrap();
        // Distinct modification times, oldest first.
        let t = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_secs(1_000_000 + i as u64);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(t)
            .unwrap();
        paths.push(path);
    }
    // A dead writer's temporary file, and one being written now.
    let dead = dir.path().join(".1.1.tmp");
    std::fs::write(&dead, b"x").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&dead)
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH)
        .unwrap();
    let live = dir.path().join(".2.2.tmp");
    std::fs::write(&live, b"x").unwrap();
    // The pack this run wrote is kept even though it is the oldest.
    pack::evict(dir.path(), &paths[0]);
    let left: Vec<bool> = paths.iter().map(|p| p.exists()).collect();
    assert!(left[0]);
    assert_eq!(left.iter().filter(|&&b| b).count(), pack::MAX_PACKS);
    assert!(left[left.len() - 1]);
    assert!(!dead.exists());
    assert!(live.exists());
    // No temporary file is left by the writes themselves.
    assert_eq!(pack::read(&paths[0]).unwrap(), Some(sample()));
    assert_eq!(pack::read(&dir.path().join("none.kcache")).unwrap(), None);
}
