//! The level a configuration's `[levels]` entry gives a finding kind: read
//! by the configuration, carried in the command's arguments and applied by
//! the pipeline, so it sits below all three.

/// The level a `[levels]` entry gives a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Allow,
    Warn,
    Deny,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}
