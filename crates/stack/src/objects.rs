//! Frame sizes from the objects: the `.stack_sizes` sections rustc writes
//! with `-Zemit-stack-sizes` (LLVM's: per function, its address relocated
//! to the function, then its frame in bytes as ULEB128), and the `.su`
//! files clang and GCC write with `-fstack-usage` (`file:line:col:name`,
//! a tab, the bytes, a tab, `static`/`dynamic`/`dynamic,bounded`).
//!
//! The objects are found as `kanalyze build-error` finds them
//! (`build_error::inputs`: files, archive members, directories searched
//! for `.o`, `.a` and `.rlib`); `.su` files are named, or found in the same
//! directories. Every object is parsed and every section checked to lie in
//! the file before anything is believed; a file that is not an object, or
//! whose `.stack_sizes` does not parse, is an error naming it, and the
//! other inputs are still read.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use build_error::inputs::{self, InputError, ObjectData};
pub use object::Architecture;
use object::{
    Object, ObjectKind, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex, SymbolKind,
};
use rayon::prelude::*;

/// The section LLVM writes the frame sizes into.
pub const SECTION: &str = ".stack_sizes";

/// What one object says about the functions it defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectFrames {
    /// `path` or `archive(member)`.
    pub name: String,
    pub arch: Architecture,
    /// It has a `.stack_sizes` section.
    pub has_sizes: bool,
    /// Every function symbol it defines, with its frame when a
    /// `.stack_sizes` entry names it.
    pub functions: Vec<(String, Option<u64>)>,
}

/// One C function's frame from a `.su` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuFrame {
    pub bytes: u64,
    /// `dynamic` without `bounded`: the frame grows at run time (`alloca`,
    /// a variable-length array) and `bytes` is only its fixed part.
    pub dynamic: bool,
    /// `file:line:col` as the `.su` file gives it.
    pub at: String,
}

/// A symbol's frame over every object that defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolFrame {
    /// The largest frame any copy records; `None` when no copy has an
    /// entry (an object without `.stack_sizes`, or a function LLVM gave
    /// none: one with a dynamic stack allocation).
    pub bytes: Option<u64>,
    /// The first object (by name) that defines it.
    pub object: String,
}

/// Everything read from the `--objects` paths.
#[derive(Debug, Default)]
pub struct Frames {
    /// Objects read (plain files plus archive members).
    pub objects: Vec<ObjectFrames>,
    pub archives: usize,
    /// Inputs that are not objects with machine code, with why.
    pub skipped: Vec<(String, &'static str)>,
    /// Inputs that could not be read.
    pub errors: Vec<InputError>,
    /// `.su` files read.
    pub su_files: usize,
    /// C functions by name, from the `.su` files (the largest frame of a
    /// name found twice).
    pub su: HashMap<String, SuFrame>,
}

impl Frames {
    /// Every defined function symbol with its frame.
    pub fn symbols(&self) -> HashMap<&str, SymbolFrame> {
        let mut out: HashMap<&str, SymbolFrame> = HashMap::new();
        for o in &self.objects {
            for (symbol, bytes) in &o.functions {
                let entry = out.entry(symbol.as_str()).or_insert_with(|| SymbolFrame {
                    bytes: None,
                    object: o.name.clone(),
                });
                entry.bytes = match (entry.bytes, *bytes) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        out
    }
}

/// Reads every object and `.su` file the paths stand for. The result does
/// not depend on the order of the paths or the number of threads: inputs
/// are sorted and read in parallel into ordered results.
pub fn read(paths: &[PathBuf]) -> Frames {
    let (su_named, object_paths): (Vec<PathBuf>, Vec<PathBuf>) =
        paths.iter().cloned().partition(|p| is_su(p));
    let (found, errors, passed) = inputs::find(&object_paths);
    let mut out = Frames {
        errors,
        skipped: passed,
        ..Frames::default()
    };
    type Parsed = Vec<Result<ObjectFrames, InputError>>;
    let per_file: Vec<(inputs::Read, Parsed)> = found
        .par_iter()
        .map(|f| {
            let read = inputs::read(f);
            let parsed = read.objects.iter().map(parse).collect();
            (read, parsed)
        })
        .collect();
    for (read, parsed) in per_file {
        out.archives += read.archives;
        out.skipped.extend(read.skipped);
        out.errors.extend(read.errors);
        for result in parsed {
            match result {
                Ok(o) => out.objects.push(o),
                Err(e) => out.errors.push(e),
            }
        }
    }
    // `.su` files: named, or in the directories searched for objects.
    let mut su_paths = su_named;
    for p in &object_paths {
        if p.is_dir() {
            for entry in walkdir::WalkDir::new(p).sort_by_file_name().into_iter() {
                // Unreadable directories were reported by the object search.
                let Ok(entry) = entry else { continue };
                if entry.file_type().is_file() && is_su(entry.path()) {
                    su_paths.push(entry.into_path());
                }
            }
        }
    }
    su_paths.sort();
    su_paths.dedup();
    for path in su_paths {
        let name = path.display().to_string();
        // Read only if it is a regular file: a FIFO would block the run.
        let text = kmir::read_regular(&path).and_then(|bytes| {
            String::from_utf8(bytes)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        });
        match text {
            Ok(text) => match parse_su(&text) {
                Ok(entries) => {
                    out.su_files += 1;
                    for (function, frame) in entries {
                        let keep = out
                            .su
                            .get(&function)
                            .is_none_or(|old| frame.bytes > old.bytes);
                        if keep {
                            out.su.insert(function, frame);
                        }
                    }
                }
                Err(why) => out.errors.push(InputError::new(&name, why)),
            },
            Err(e) => out
                .errors
                .push(InputError::new(&name, format!("cannot read it: {e}"))),
        }
    }
    out
}

fn is_su(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "su")
}

/// One object: its architecture, whether it has frame sizes, and the
/// frame of each function it defines.
pub fn parse(object: &ObjectData) -> Result<ObjectFrames, InputError> {
    let bad = |why: String| InputError::new(&object.name, why);
    let file = object::File::parse(object.data.as_slice()).map_err(|e| {
        if object.data.starts_with(b"\x7fELF") {
            bad(format!("a truncated or corrupt ELF object: {e}"))
        } else {
            bad(format!(
                "not an object file ({e}): `--objects` takes ELF objects, archives of them, `.su` files and directories of them"
            ))
        }
    })?;
    // A section that does not lie in the file would be read as empty: the
    // object is truncated or corrupt, and nothing in it is believed.
    for section in file.sections() {
        if let Err(e) = section.data() {
            let name = section.name().unwrap_or("<unnamed>");
            return Err(bad(format!(
                "a truncated or corrupt ELF object: section `{name}`: {e}"
            )));
        }
    }
    let arch = file.architecture();
    let relocatable = file.kind() == ObjectKind::Relocatable;
    // Function symbols by where they are: (section, offset) in a
    // relocatable object, (none, address) in a linked one.
    let mut at: HashMap<Place, Vec<usize>> = HashMap::new();
    let mut functions: Vec<(String, Option<u64>)> = Vec::new();
    for symbol in file.symbols() {
        if symbol.kind() != SymbolKind::Text || !symbol.is_definition() {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let key = if relocatable {
            (symbol.section_index(), symbol.address())
        } else {
            (None, symbol.address())
        };
        at.entry(key).or_default().push(functions.len());
        functions.push((name.to_string(), None));
    }
    let mut has_sizes = false;
    for section in file.sections() {
        if section.name().ok() != Some(SECTION) {
            continue;
        }
        has_sizes = true;
        let entries = stack_sizes(&file, &section, relocatable)
            .map_err(|why| bad(format!("its `{SECTION}` section cannot be read: {why}")))?;
        for (key, bytes) in entries {
            for &i in at.get(&key).into_iter().flatten() {
                let slot = &mut functions[i].1;
                *slot = Some(slot.map_or(bytes, |old| old.max(bytes)));
            }
        }
    }
    Ok(ObjectFrames {
        name: object.name.clone(),
        arch,
        has_sizes,
        functions,
    })
}

/// Where a function is: (section, offset) in a relocatable object, (none,
/// address) in a linked one.
type Place = (Option<SectionIndex>, u64);

/// The entries of one `.stack_sizes` section: where each function is (as
/// the symbol table keys it) and its frame.
fn stack_sizes(
    file: &object::File<'_>,
    section: &object::Section<'_, '_>,
    relocatable: bool,
) -> Result<Vec<(Place, u64)>, String> {
    let data = section.data().map_err(|e| e.to_string())?;
    let width = match file.architecture().address_size() {
        Some(object::AddressSize::U64) => 8,
        Some(object::AddressSize::U32) => 4,
        _ => return Err("the architecture's address size is not known".into()),
    };
    let little = file.is_little_endian();
    // Where each entry's address goes: its relocation, by offset.
    let mut relocations: BTreeMap<u64, Place> = BTreeMap::new();
    if relocatable {
        for (offset, r) in section.relocations() {
            let field = usize::try_from(offset)
                .ok()
                .and_then(|o| data.get(o..o.checked_add(width)?))
                .ok_or_else(|| format!("a relocation at {offset:#x} is outside the section"))?;
            let implicit = if r.has_implicit_addend() {
                build_error::layout::read_uint(field, little)
            } else {
                0
            };
            let addend = (r.addend() as u64).wrapping_add(implicit);
            let target = match r.target() {
                RelocationTarget::Section(index) => (Some(index), addend),
                RelocationTarget::Symbol(index) => {
                    let symbol = file
                        .symbol_by_index(index)
                        .map_err(|e| format!("a relocation names a bad symbol: {e}"))?;
                    (
                        symbol.section_index(),
                        symbol.address().wrapping_add(addend),
                    )
                }
                _ => continue,
            };
            relocations.insert(offset, target);
        }
    }
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let field = data
            .get(pos..pos + width)
            .ok_or_else(|| format!("an entry at {pos:#x} is cut short"))?;
        let key = if relocatable {
            relocations.get(&(pos as u64)).copied()
        } else {
            Some((None, build_error::layout::read_uint(field, little)))
        };
        pos += width;
        let bytes = uleb128(data, &mut pos).ok_or_else(|| {
            format!("the frame size of the entry ending at {pos:#x} is cut short")
        })?;
        // An entry without a relocation names no function of this object.
        if let Some(key) = key {
            out.push((key, bytes));
        }
    }
    Ok(out)
}

/// An unsigned LEB128 at `*pos`, advancing it; `None` if it runs past the
/// end or does not fit 64 bits.
pub fn uleb128(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        let low = u64::from(byte & 0x7f);
        if shift >= 64 || (shift > 0 && low >> (64 - shift) != 0) {
            return None;
        }
        value |= low << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// The entries of a `.su` file. A line that is not `location:name`, a tab,
/// a number, a tab, qualifiers is an error naming the line.
pub fn parse_su(text: &str) -> Result<Vec<(String, SuFrame)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "line {}: not a `-fstack-usage` line (`file:line:col:function<TAB>bytes<TAB>static`): `{line}`",
                n + 1
            )
        };
        let mut fields = line.split('\t');
        let (Some(place), Some(bytes), Some(qualifiers), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        let (at, function) = place.rsplit_once(':').ok_or_else(bad)?;
        let bytes: u64 = bytes.trim().parse().map_err(|_| bad())?;
        let qualifiers: Vec<&str> = qualifiers.trim().split(',').collect();
        if function.is_empty()
            || qualifiers
                .iter()
                .any(|q| !matches!(*q, "static" | "dynamic" | "bounded"))
        {
            return Err(bad());
        }
        let dynamic = qualifiers.contains(&"dynamic") && !qualifiers.contains(&"bounded");
        out.push((
            function.to_string(),
            SuFrame {
                bytes,
                dynamic,
                at: at.to_string(),
            },
        ));
    }
    Ok(out)
}

/// The architecture a target triple names, when its first component is
/// one the objects can be compared with (a target JSON's name,
/// `target-1234…`, names none).
pub fn target_arch(target: &str) -> Option<Architecture> {
    let first = target.split('-').next().unwrap_or(target);
    Some(match first {
        "x86_64" => Architecture::X86_64,
        "i386" | "i586" | "i686" => Architecture::I386,
        "aarch64" | "arm64" => Architecture::Aarch64,
        "riscv64" | "riscv64gc" | "riscv64imac" => Architecture::Riscv64,
        "riscv32" | "riscv32imac" | "riscv32imc" | "riscv32i" => Architecture::Riscv32,
        "loongarch64" => Architecture::LoongArch64,
        "powerpc64" | "powerpc64le" => Architecture::PowerPc64,
        "s390x" => Architecture::S390x,
        a if a.starts_with("armv") || a.starts_with("thumbv") || a == "arm" => Architecture::Arm,
        _ => return None,
    })
}

/// The bytes a call pushes besides the callee's frame: the return address
/// on x86, where `call` pushes it below the callee's frame. Elsewhere the
/// callee saves the link register inside the frame LLVM records.
pub fn return_address_bytes(arch: Architecture) -> u64 {
    match arch {
        Architecture::X86_64 => 8,
        Architecture::X86_64_X32 | Architecture::I386 => 4,
        _ => 0,
    }
}

/// The architecture's name for messages.
pub fn arch_name(arch: Architecture) -> String {
    match arch {
        Architecture::X86_64 => "x86_64".into(),
        Architecture::I386 => "x86".into(),
        Architecture::Aarch64 => "aarch64".into(),
        Architecture::Arm => "arm".into(),
        Architecture::Riscv64 => "riscv64".into(),
        Architecture::Riscv32 => "riscv32".into(),
        Architecture::LoongArch64 => "loongarch64".into(),
        Architecture::PowerPc64 => "powerpc64".into(),
        Architecture::S390x => "s390x".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128() {
        let data = [0xd8, 0x17, 0x18, 0x88, 0x08, 0x80];
        let mut pos = 0;
        assert_eq!(uleb128(&data, &mut pos), Some(3032));
        assert_eq!(uleb128(&data, &mut pos), Some(24));
        assert_eq!(uleb128(&data, &mut pos), Some(1032));
        assert_eq!(pos, 5);
        // A continuation byte at the end: cut short.
        assert_eq!(uleb128(&data, &mut pos), None);
        let too_big = [0xff; 11];
        assert_eq!(uleb128(&too_big, &mut 0), None);
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(uleb128(&max, &mut 0), Some(u64::MAX));
    }

    #[test]
    fn su_lines() {
        let text = "drivers/a.c:12:5:foo\t48\tstatic\n\
                    rust/helpers/helpers.c:3:1:rust_helper_x\t16\tdynamic,bounded\n\
                    lib/b.c:9:1:grows\t32\tdynamic\n";
        let entries = parse_su(text).expect("parses");
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].0, "foo");
        assert_eq!(
            entries[0].1,
            SuFrame {
                bytes: 48,
                dynamic: false,
                at: "drivers/a.c:12:5".into()
            }
        );
        assert!(!entries[1].1.dynamic);
        assert!(entries[2].1.dynamic);
        let err = parse_su("foo 12 static\n").expect_err("no tabs");
        assert!(
            err.starts_with("line 1: not a `-fstack-usage` line"),
            "{err}"
        );
        assert!(parse_su("a.c:1:1:f\tx\tstatic").is_err());
        assert!(parse_su("a.c:1:1:f\t1\tsometimes").is_err());
    }

    #[test]
    fn targets() {
        assert_eq!(
            target_arch("x86_64-unknown-linux-gnu"),
            Some(Architecture::X86_64)
        );
        assert_eq!(
            target_arch("aarch64-unknown-none"),
            Some(Architecture::Aarch64)
        );
        assert_eq!(target_arch("target-5637172677741850002"), None);
        assert_eq!(return_address_bytes(Architecture::X86_64), 8);
        assert_eq!(return_address_bytes(Architecture::Aarch64), 0);
    }

    #[test]
    fn text_that_is_not_an_object_is_an_error_naming_it() {
        let e = parse(&ObjectData {
            name: "notes.o".into(),
            data: b"just some text\n".to_vec(),
            in_archive: false,
        })
        .expect_err("not an object");
        assert_eq!(e.name, "notes.o");
        assert!(
            e.message.starts_with("not an object file ("),
            "{}",
            e.message
        );
        // ELF whose headers are cut short is said to be ELF.
        let e = parse(&ObjectData {
            name: "cut.o".into(),
            data: b"\x7fELF\x02\x01\x01".to_vec(),
            in_archive: false,
        })
        .expect_err("cut short");
        assert!(
            e.message.starts_with("a truncated or corrupt ELF object: "),
            "{}",
            e.message
        );
    }
}
