//! One object file: the relocations against `rust_build_error` in its
//! loaded sections, the function each one is in, and the inline frames its
//! DWARF gives for it.

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex, SymbolKind};

use crate::frames::{Debug, NoDebug};
use crate::inputs::{InputError, ObjectData};
use crate::layout::Layout;
use crate::{BUILD_ERROR_SYMBOL, Explanation, FnSymbol, Reference, demangle};

/// What one object gave: its references, or why it could not be read.
pub fn scan(object: &ObjectData) -> Result<Vec<Reference>, InputError> {
    let file = object::File::parse(object.data.as_slice())
        .map_err(|e| InputError::new(&object.name, format!("not a readable object file: {e}")))?;
    // `object` reads relocation sections lazily and skips one it cannot
    // read, which would hide a reference: every section must lie in the
    // file before any is believed.
    for section in file.sections() {
        if let Err(e) = section.data() {
            let name = section.name().unwrap_or("<unnamed>");
            return Err(InputError::new(
                &object.name,
                format!("not a readable object file: section `{name}`: {e}"),
            ));
        }
    }
    let mut targets = Vec::new();
    for symbol in file.symbols() {
        if symbol.name_bytes().ok() != Some(BUILD_ERROR_SYMBOL.as_bytes()) {
            continue;
        }
        if !symbol.is_undefined() {
            // The object that defines `build_error` (the kernel's
            // `build_error` crate) refers to it legitimately.
            return Ok(Vec::new());
        }
        targets.push(RelocationTarget::Symbol(symbol.index()));
    }
    if targets.is_empty() {
        return Ok(Vec::new());
    }

    struct Site {
        section: SectionIndex,
        section_name: String,
        offset: u64,
    }
    let mut sites = Vec::new();
    for section in file.sections() {
        // Debug sections may name the symbol too; only code and data that
        // the linker must resolve make the build fail.
        if !crate::layout::is_loaded(section.kind()) {
            continue;
        }
        for (offset, relocation) in section.relocations() {
            if targets.contains(&relocation.target()) {
                sites.push(Site {
                    section: section.index(),
                    section_name: section.name().unwrap_or("<unnamed>").to_string(),
                    offset,
                });
            }
        }
    }
    if sites.is_empty() {
        return Ok(Vec::new());
    }

    let layout = Layout::new(&file);
    let debug = Debug::load(&file, &layout);
    // Either a lookup context, or what every reference of this object is
    // explained with instead.
    let context = match &debug {
        Ok(d) => d.context().map_err(Explanation::BrokenDebugInfo),
        Err(NoDebug::Missing) => Err(Explanation::NoDebugInfo),
        Err(NoDebug::Broken(e)) => Err(Explanation::BrokenDebugInfo(e.clone())),
    };
    let mut references: Vec<Reference> = Vec::new();
    for site in sites {
        let explanation = match &context {
            Err(why) => why.clone(),
            Ok(context) => match layout.address(site.section, site.offset) {
                Some(address) => context.frames(address),
                None => Explanation::NoLineInfo,
            },
        };
        let symbol = containing_symbol(&file, site.section, site.offset);
        let reference = Reference {
            object: object.name.clone(),
            section: site.section_name,
            offset: site.offset,
            symbol,
            explanation,
            count: 1,
            also_in: Vec::new(),
        };
        // Several references with the same chain in the same function
        // (an unrolled loop, two calls merged differently) are one report.
        match references.iter_mut().find(|r| r.same_report(&reference)) {
            Some(r) => r.count += 1,
            None => references.push(reference),
        }
    }
    Ok(references)
}

/// The symbol whose code or data holds `offset` of `section`: the defined
/// symbol at or before it (preferring functions, then global ones), as
/// `objdump` attributes an address.
fn containing_symbol(
    file: &object::File<'_>,
    section: SectionIndex,
    offset: u64,
) -> Option<FnSymbol> {
    let mut best: Option<(u64, bool, bool, String)> = None;
    for symbol in file.symbols() {
        if symbol.section_index() != Some(section) || !symbol.is_definition() {
            continue;
        }
        let start = symbol.address();
        if start > offset || (symbol.size() > 0 && offset >= start.saturating_add(symbol.size())) {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let key = (start, symbol.kind() == SymbolKind::Text, symbol.is_global());
        let better = match &best {
            None => true,
            Some((s, t, g, _)) => key > (*s, *t, *g),
        };
        if better {
            best = Some((key.0, key.1, key.2, name.to_string()));
        }
    }
    best.map(|(_, _, _, raw)| FnSymbol {
        demangled: demangle(&raw),
        raw,
    })
}
