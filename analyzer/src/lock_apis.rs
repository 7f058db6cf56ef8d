//! Which of the spec's Rust lock APIs and blocking calls the program uses
//! (the userspace profile's summary says so, and says so when there is
//! none: a clean run over a program whose locks kanalyze does not know is
//! not a proof of anything).

use program::Program;

/// The APIs one run recognised, by the names the program's code uses.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recognised {
    /// Lock types whose acquisition the spec describes (`std::sync::Mutex`).
    pub locks: Vec<String>,
    /// Blocking functions (`std::thread::sleep`).
    pub blocking: Vec<String>,
    /// Sections that run a closure in an atomic context
    /// (`cortex_m::interrupt::free`).
    pub sections: Vec<String>,
}

/// How a function the spec describes is named in the list: as the code
/// calls it (`std::thread::sleep`, generic arguments left out), or by its
/// item path where that name says less (a trait method of a type,
/// `<cortex_m::delay::Delay as embedded_hal::delay::DelayNs>::delay_ms`).
fn listed_name(f: &program::Function) -> String {
    let name = kmir::name::without_generics(&f.name);
    if name.starts_with('<') || name.starts_with("::") || name.ends_with("::") {
        spec::without_lifetimes(&f.item_path).into_owned()
    } else {
        name
    }
}

/// The item path of the function the program calls by the name `name`
/// (its path as the code spells it, generic arguments left out): what a
/// `[rust]` entry that used the name should say instead.
pub fn item_named(program: &Program, name: &str) -> Option<String> {
    let name = kmir::name::without_generics(&spec::without_lifetimes(name));
    let mut items: Vec<&str> = program
        .functions
        .iter()
        .filter(|f| kmir::name::without_generics(&f.name) == name)
        .map(|f| f.item_path.as_str())
        .collect();
    items.sort_unstable();
    items.dedup();
    match items.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// The spec entries of `spec` with a lock acquisition or blocking that
/// name a function of `program`.
pub fn recognised(program: &Program, spec: &spec::Spec) -> Recognised {
    let mut out = Recognised::default();
    for f in &program.functions {
        let Some(r) = spec.rust_item(&f.item_path).filter(|r| r.has_effect()) else {
            continue;
        };
        let name = listed_name(f);
        match &r.lock {
            Some(l) if !matches!(l.effect.op, spec::LockOp::Release) => {
                let ty = name.rsplit_once("::").map_or(name.as_str(), |(t, _)| t);
                out.locks.push(ty.to_string());
            }
            Some(_) => {}
            None if r.section.is_some() => out.sections.push(name),
            None => out.blocking.push(name),
        }
    }
    for v in [&mut out.locks, &mut out.blocking, &mut out.sections] {
        v.sort();
        v.dedup();
    }
    out
}

/// The line the summary gives it, for a profile whose built-in spec names
/// lock APIs (`None` when the spec names none: the kernel's are C
/// functions).
pub fn text(profile: &str, spec: &spec::Spec, r: &Recognised) -> Option<String> {
    // The kernel's spec describes C functions: nothing to say.
    spec.rust_lock_entries().next()?;
    let list = |v: &[String]| {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let locks = if r.locks.is_empty() {
        "no lock API the spec describes is used (only locks the program's annotations or `--spec` files describe are checked)".to_string()
    } else {
        format!("lock APIs recognised: {}", list(&r.locks))
    };
    let blocking = if r.blocking.is_empty() {
        String::new()
    } else {
        format!("; blocking calls recognised: {}", list(&r.blocking))
    };
    let sections = if r.sections.is_empty() {
        String::new()
    } else {
        format!("; critical sections recognised: {}", list(&r.sections))
    };
    Some(format!("{profile} profile: {locks}{blocking}{sections}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_generics() {
        assert_eq!(
            kmir::name::without_generics("std::sync::Mutex::<u32>::lock"),
            "std::sync::Mutex::lock"
        );
        assert_eq!(
            kmir::name::without_generics("lock_api::Mutex::<parking_lot::RawMutex, Vec<u8>>::lock"),
            "lock_api::Mutex::lock"
        );
        assert_eq!(
            kmir::name::without_generics("std::thread::sleep"),
            "std::thread::sleep"
        );
    }

    #[test]
    fn says_when_nothing_was_recognised() {
        let spec = spec::Spec::userspace();
        let none = text("userspace", &spec, &Recognised::default()).unwrap();
        assert!(
            none.contains("no lock API the spec describes is used"),
            "{none}"
        );
        let some = Recognised {
            locks: vec!["std::sync::Mutex".into()],
            blocking: vec!["std::thread::sleep".into()],
            sections: Vec::new(),
        };
        assert_eq!(
            text("userspace", &spec, &some).unwrap(),
            "userspace profile: lock APIs recognised: `std::sync::Mutex`; blocking calls recognised: `std::thread::sleep`"
        );
        // The kernel's spec describes C functions: nothing to say.
        assert_eq!(text("kernel", &spec::Spec::builtin_kernel(), &some), None);
        let firmware = Recognised {
            locks: vec!["spin::mutex::Mutex".into()],
            blocking: vec!["cortex_m::asm::wfi".into()],
            sections: vec!["cortex_m::interrupt::free".into()],
        };
        assert_eq!(
            text("embedded", &spec::Spec::embedded(), &firmware).unwrap(),
            "embedded profile: lock APIs recognised: `spin::mutex::Mutex`; blocking calls recognised: `cortex_m::asm::wfi`; critical sections recognised: `cortex_m::interrupt::free`"
        );
    }
}
