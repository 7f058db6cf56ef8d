//! A function's summary as lines of facts: built by the CLI from the
//! analysis (which `report` does not depend on), printed as text by
//! `kanalyze summary` and as a table in the HTML report.

use program::FnId;

/// One fact of a summary: `adjustment: 1`, an indented case under the line
/// before, or a sentence of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryLine {
    /// `adjustment`, `why`, …; `None` for a detail or a sentence.
    pub key: Option<&'static str>,
    /// Printed under the keyed line before it (a case, a conditional
    /// expectation).
    pub detail: bool,
    pub text: String,
    /// The function this fact comes from (a `why` line's callee): the
    /// report links to its summary, so the reason can be followed down.
    pub link: Option<FnId>,
}

impl SummaryLine {
    pub fn keyed(key: &'static str, text: impl Into<String>) -> SummaryLine {
        SummaryLine {
            key: Some(key),
            detail: false,
            text: text.into(),
            link: None,
        }
    }

    pub fn detail(text: impl Into<String>) -> SummaryLine {
        SummaryLine {
            key: None,
            detail: true,
            text: text.into(),
            link: None,
        }
    }

    pub fn plain(text: impl Into<String>) -> SummaryLine {
        SummaryLine {
            key: None,
            detail: false,
            text: text.into(),
            link: None,
        }
    }

    pub fn linked(mut self, f: FnId) -> SummaryLine {
        self.link = Some(f);
        self
    }

    /// The line as `kanalyze summary` prints it: keys in a column of 13.
    pub fn text_line(&self) -> String {
        match self.key {
            Some(key) => format!("  {:<13}{}", format!("{key}:"), self.text),
            None if self.detail => format!("    {}", self.text),
            None => format!("  {}", self.text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SummaryLine;

    #[test]
    fn text_lines_keep_the_summary_columns() {
        assert_eq!(
            SummaryLine::keyed("why last", "x").text_line(),
            "  why last:    x"
        );
        assert_eq!(
            SummaryLine::keyed("expectation", "0").text_line(),
            "  expectation: 0"
        );
        assert_eq!(SummaryLine::detail("case").text_line(), "    case");
        assert_eq!(SummaryLine::plain("note").text_line(), "  note");
    }
}
