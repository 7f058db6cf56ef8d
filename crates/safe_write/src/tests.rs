use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Barrier};

use super::{UpdateError, read_settled, resolve, update, write, write_with};

/// Appends `line` to the file under its lock, as a triage update does.
fn append(path: &Path, line: &str) {
    update::<()>(path, |old| {
        let mut text = old
            .map(|o| String::from_utf8_lossy(o).into_owned())
            .unwrap_or_default();
        // Widen the window between the read and the write.
        std::thread::sleep(std::time::Duration::from_millis(2));
        text.push_str(line);
        text.push('\n');
        Ok(Some(text.into_bytes()))
    })
    .expect("updated");
}

#[test]
fn concurrent_updates_keep_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("triage.toml");
    let n = 24;
    let start = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                append(&path, &format!("entry {i}"));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("entry {i}")).collect();
    want.sort();
    assert_eq!(lines, want);
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("triage.toml")]);
}

#[cfg(unix)]
#[test]
fn a_symlinked_file_is_updated_at_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.toml");
    std::fs::write(&target, "a\n").unwrap();
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink("real.toml", &link).unwrap();
    append(&link, "b");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "a\nb\n");
    assert_eq!(resolve(&link).unwrap(), target);
}

#[cfg(unix)]
#[test]
fn a_planted_link_at_the_old_temporary_name_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let path = dir.path().join("triage.toml");
    // The fixed names a writer could have used.
    for name in ["triage.toml.tmp", ".triage.toml.tmp"] {
        std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
    }
    write(&path, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pack");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = write(&path, b"x").unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn a_refused_update_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.toml");
    let r = update(&path, |old| {
        assert!(old.is_none());
        Err("no")
    });
    assert!(matches!(r, Err(UpdateError::Update("no"))));
    assert!(!path.exists());
    update::<()>(&path, |_| Ok(None)).unwrap();
    assert!(!path.exists());
}

#[cfg(unix)]
#[test]
fn permissions_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "a").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    write(&path, b"b").unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

/// A reader that comes while a writer holds the file (created empty for the
/// lock, where there was none) reads what the writer renames over it, never
/// the empty file.
#[test]
fn a_read_during_a_write_gets_the_whole_new_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("entry");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            write_with(&path, |f| {
                locked_tx.send(()).expect("the reader waits");
                std::thread::sleep(std::time::Duration::from_millis(100));
                f.write_all(b"new contents")
            })
        })
    };
    locked_rx.recv().expect("the writer holds the lock");
    let open = |p: &Path| std::fs::File::open(p);
    let bytes = read_settled(&path, open).expect("read");
    assert_eq!(bytes, b"new contents");
    writer.join().expect("the writer ends").expect("written");
    assert_eq!(
        read_settled(&path, open).expect("read again"),
        b"new contents"
    );
}
