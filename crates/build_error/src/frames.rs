//! The chain of inlined calls at a code address, from the object's DWARF:
//! the innermost inlined function (where the `build_error` call is) first,
//! the function the code was inlined into last.

use gimli::{DwarfSections, EndianSlice, RunTimeEndian};
use object::Object;

use crate::layout::Layout;
use crate::{Explanation, Frame, SourceLoc, demangle};

/// The object's DWARF, relocated, owned so that lookups can borrow it.
pub struct Debug<'data> {
    sections: DwarfSections<std::borrow::Cow<'data, [u8]>>,
    endian: RunTimeEndian,
}

/// Why an object's DWARF gives no frames.
pub enum NoDebug {
    /// The object has no `.debug_info`: built without debug info.
    Missing,
    /// It has some, but it cannot be read.
    Broken(String),
}

impl<'data> Debug<'data> {
    pub fn load(file: &object::File<'data>, layout: &Layout) -> Result<Debug<'data>, NoDebug> {
        let has_info = file
            .section_by_name(gimli::SectionId::DebugInfo.name())
            .is_some();
        if !has_info {
            return Err(NoDebug::Missing);
        }
        let sections = DwarfSections::load(|id| layout.dwarf_section(file, id.name()))
            .map_err(NoDebug::Broken)?;
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        Ok(Debug { sections, endian })
    }

    /// A lookup context over these sections.
    pub fn context(&self) -> Result<Context<'_>, String> {
        let dwarf = self
            .sections
            .borrow(|section| EndianSlice::new(section.as_ref(), self.endian));
        addr2line::Context::from_dwarf(dwarf)
            .map(|inner| Context { inner })
            .map_err(|e| format!("the DWARF cannot be read: {e}"))
    }
}

pub struct Context<'a> {
    inner: addr2line::Context<EndianSlice<'a, RunTimeEndian>>,
}

impl Context<'_> {
    /// The inline frames at `address`, innermost first.
    pub fn frames(&self, address: u64) -> Explanation {
        let mut iter = match self.inner.find_frames(address).skip_all_loads() {
            Ok(iter) => iter,
            Err(e) => {
                return Explanation::BrokenDebugInfo(format!("the DWARF cannot be read: {e}"));
            }
        };
        let mut frames = Vec::new();
        loop {
            match iter.next() {
                Ok(Some(frame)) => frames.push(Frame {
                    function: frame
                        .function
                        .as_ref()
                        .and_then(|f| f.raw_name().ok())
                        .map(|name| demangle(&name)),
                    raw: frame
                        .function
                        .as_ref()
                        .and_then(|f| f.raw_name().ok())
                        .map(|name| name.into_owned()),
                    location: frame.location.and_then(|l| {
                        Some(SourceLoc {
                            file: l.file?.to_string(),
                            line: l.line.filter(|&n| n != 0)?,
                            column: l.column.filter(|&c| c != 0),
                        })
                    }),
                }),
                Ok(None) => break,
                Err(e) => {
                    return Explanation::BrokenDebugInfo(format!("the DWARF cannot be read: {e}"));
                }
            }
        }
        if frames.iter().all(|f| f.location.is_none()) {
            Explanation::NoLineInfo
        } else {
            Explanation::Frames(frames)
        }
    }
}
