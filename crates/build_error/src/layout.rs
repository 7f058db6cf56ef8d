//! Addresses for an object file's sections and its DWARF as a linker would
//! see it.
//!
//! In a relocatable object (`.o`, an rlib's members) every section starts
//! at address 0, and with `-ffunction-sections` (rustc's default) every
//! function has a section of its own, so the addresses in its DWARF are all
//! small numbers that only relocations tell apart. We lay the loadable
//! sections out one after another, like a linker, and patch the DWARF
//! sections' relocations with those addresses; then a code address is
//! `base(section) + offset` and DWARF readers need to know nothing about
//! relocations. A linked file (executable, shared object) already has
//! addresses and relocated DWARF and is taken as it is.

use std::borrow::Cow;
use std::collections::HashMap;

use object::{
    Object, ObjectKind, ObjectSection, ObjectSymbol, RelocationEncoding, RelocationKind,
    RelocationTarget, SectionIndex, SectionKind,
};

/// The address each loadable section gets.
pub struct Layout {
    bases: HashMap<SectionIndex, u64>,
    relocatable: bool,
}

/// Sections that are loaded at run time (code and data) and so get an
/// address; debug and metadata sections are not, and relocations against
/// them mean offsets into them, which is what address 0 gives.
pub(crate) fn is_loaded(kind: SectionKind) -> bool {
    matches!(
        kind,
        SectionKind::Text
            | SectionKind::Data
            | SectionKind::ReadOnlyData
            | SectionKind::ReadOnlyDataWithRel
            | SectionKind::ReadOnlyString
            | SectionKind::UninitializedData
            | SectionKind::Tls
            | SectionKind::UninitializedTls
            | SectionKind::TlsVariables
    )
}

impl Layout {
    pub fn new(file: &object::File<'_>) -> Layout {
        let relocatable = file.kind() == ObjectKind::Relocatable;
        let mut bases = HashMap::new();
        // Start above 0 so that no code address is mistaken for "none".
        let mut next: u64 = 0x1000;
        for section in file.sections() {
            if relocatable {
                if !is_loaded(section.kind()) {
                    continue;
                }
                let align = section.align().max(1);
                next = next.div_ceil(align).saturating_mul(align);
                bases.insert(section.index(), next);
                // At least one byte each, so that two empty sections still
                // have different addresses.
                next = next.saturating_add(section.size().max(1));
            } else {
                bases.insert(section.index(), section.address());
            }
        }
        Layout { bases, relocatable }
    }

    /// The address of `offset` in section `index`.
    pub fn address(&self, index: SectionIndex, offset: u64) -> Option<u64> {
        if self.relocatable {
            self.bases.get(&index).map(|b| b.wrapping_add(offset))
        } else {
            // Relocation offsets of a linked file are addresses already.
            Some(offset)
        }
    }

    fn section_base(&self, index: SectionIndex) -> u64 {
        self.bases.get(&index).copied().unwrap_or(0)
    }

    /// The address a relocation against `target` resolves to, before its
    /// addend.
    fn target_value(&self, file: &object::File<'_>, target: RelocationTarget) -> Option<u64> {
        match target {
            RelocationTarget::Section(index) => Some(self.section_base(index)),
            RelocationTarget::Symbol(index) => {
                let symbol = file.symbol_by_index(index).ok()?;
                Some(match symbol.section_index() {
                    // A relocatable object's symbol value is its offset in
                    // its section.
                    Some(section) => self.section_base(section).wrapping_add(symbol.address()),
                    None => symbol.address(),
                })
            }
            RelocationTarget::Absolute => Some(0),
            _ => None,
        }
    }

    /// One DWARF section's bytes, decompressed and, in a relocatable
    /// object, with its absolute relocations applied. A relocation that
    /// does not fit the section is an error: the DWARF would be read wrong.
    pub fn dwarf_section<'data>(
        &self,
        file: &object::File<'data>,
        name: &str,
    ) -> Result<Cow<'data, [u8]>, String> {
        let Some(section) = file.section_by_name(name) else {
            return Ok(Cow::Borrowed(&[]));
        };
        let data = section
            .uncompressed_data()
            .map_err(|e| format!("section `{name}` cannot be read: {e}"))?;
        if !self.relocatable {
            return Ok(data);
        }
        let mut relocations = section.relocations().peekable();
        if relocations.peek().is_none() {
            return Ok(data);
        }
        let mut bytes = data.into_owned();
        let little = file.is_little_endian();
        for (offset, relocation) in relocations {
            // Only plain absolute addresses and offsets occur in the DWARF
            // sections this reads on the kernel's targets (x86_64, arm64);
            // anything else is left as the compiler wrote it.
            if relocation.kind() != RelocationKind::Absolute
                || relocation.encoding() != RelocationEncoding::Generic
            {
                continue;
            }
            let size = usize::from(relocation.size() / 8);
            if !matches!(size, 4 | 8) {
                continue;
            }
            let at = usize::try_from(offset)
                .ok()
                .filter(|at| at.checked_add(size).is_some_and(|end| end <= bytes.len()))
                .ok_or_else(|| {
                    format!("a relocation of `{name}` at {offset:#x} is outside the section")
                })?;
            let Some(target) = self.target_value(file, relocation.target()) else {
                continue;
            };
            let field = &mut bytes[at..at + size];
            let implicit = if relocation.has_implicit_addend() {
                read_uint(field, little)
            } else {
                0
            };
            let value = target
                .wrapping_add(relocation.addend() as u64)
                .wrapping_add(implicit);
            write_uint(field, value, little);
        }
        Ok(Cow::Owned(bytes))
    }
}

/// An unsigned integer of `field.len()` bytes (up to 8) in the object's
/// byte order.
pub fn read_uint(field: &[u8], little: bool) -> u64 {
    let mut v: u64 = 0;
    if little {
        for &b in field.iter().rev() {
            v = (v << 8) | u64::from(b);
        }
    } else {
        for &b in field {
            v = (v << 8) | u64::from(b);
        }
    }
    v
}

/// Writes the low `field.len()` bytes of `value`; a 4-byte field keeps the
/// low 32 bits, as the linker would.
fn write_uint(field: &mut [u8], value: u64, little: bool) {
    let n = field.len();
    for (i, b) in field.iter_mut().enumerate() {
        let shift = if little { i } else { n - 1 - i } * 8;
        *b = (value >> shift) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::{read_uint, write_uint};

    #[test]
    fn fields_round_trip_in_both_byte_orders() {
        for little in [true, false] {
            let mut four = [0u8; 4];
            write_uint(&mut four, 0x1_2345_6789, little);
            assert_eq!(read_uint(&four, little), 0x2345_6789);
            let mut eight = [0u8; 8];
            write_uint(&mut eight, 0x0102_0304_0506_0708, little);
            assert_eq!(read_uint(&eight, little), 0x0102_0304_0506_0708);
        }
        let mut four = [0u8; 4];
        write_uint(&mut four, 0x0102_0304, true);
        assert_eq!(four, [4, 3, 2, 1]);
    }
}
